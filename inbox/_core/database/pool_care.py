"""Keeping a writer's own pool in step with the database across outages and restarts.

Left to its defaults, psycopg_pool notices a server restart late and comes back slowly: the
idle connections the restart killed are handed out (a failed write each), and reconnection
backs off to seconds (1, 2, 4, ... s), so a receiver answered 503 for seconds after
PostgreSQL was back, and logged every failed attempt. A pool a writer owns gets:

- a check on checkout that costs no round trip on the happy path: a connection whose socket
  has something to read while idle (the server's goodbye after a restart, or EOF) is
  verified, and on a failure every idle connection is checked at once, so a request meets at
  most one dead connection instead of one each, and never the pool's growing check backoff;
- reconnection at most ``RECONNECT_SECONDS`` apart: attempts give up that quickly, and the
  give-up starts a fresh attempt at once (psycopg_pool's own backoff has no public knob);
- while the database stays unreachable, one warning per ``OUTAGE_LOG_SECONDS`` naming the
  server and the fix, one when it is back, and health checks that fail at once.
"""

from __future__ import annotations

import select
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from inbox._core.database.outage import OUTAGE_LOG_SECONDS, Outage, describe_server
from inbox._core.database.pooler import pooler_hint
from inbox._core.errors import DatabaseUnavailableError
from inbox._core.logs import get_logger

__all__ = ["RECONNECT_SECONDS", "AsyncPoolCare", "PoolCare"]

log = get_logger("inbox.writer")

RECONNECT_SECONDS = 0.5
# The probe that finds out why the database is unreachable, once per warning.
PROBE_TIMEOUT_SECONDS = 2


def _idle_socket_readable(conn: psycopg.BaseConnection[Any]) -> bool:
    """An idle connection has nothing to read unless the server said goodbye (or closed)."""
    try:
        fd = conn.pgconn.socket
    except psycopg.OperationalError:
        return True
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


PoolT = TypeVar("PoolT", ConnectionPool[Any], AsyncConnectionPool[Any])


class _Care(ABC, Generic[PoolT]):
    """What the sync and async care share; each adds its pool's callbacks (``_check``,
    ``_configure``, ``_reconnect_failed``: coroutine functions for the async pool)."""

    pool: PoolT | None = None

    def __init__(self, conninfo: str, kwargs: Mapping[str, Any] | None = None) -> None:
        self.conninfo = conninfo
        # The pool's own connection arguments: a probe that connected otherwise could
        # succeed where the pool fails (startup options a pooler refuses).
        self.kwargs = {k: v for k, v in (kwargs or {}).items() if k != "connect_timeout"}
        self.server = describe_server(conninfo)
        self.outage = Outage()

    def options(self) -> dict[str, Any]:
        """Keyword arguments for the pool's constructor."""
        return {
            "reconnect_timeout": RECONNECT_SECONDS,
            "reconnect_failed": self._reconnect_failed,
            "check": self._check,
            "configure": self._configure,
        }

    def attach(self, pool: PoolT) -> None:
        """Once the pool exists: a failed check then checks the pool's idle connections."""
        self.pool = pool

    @abstractmethod
    def _check(self, conn: Any) -> Any: ...

    @abstractmethod
    def _configure(self, conn: Any) -> Any: ...

    @abstractmethod
    def _reconnect_failed(self, pool: PoolT) -> Any: ...

    def known_down(self, pool: PoolT) -> None:
        """Raise ``DatabaseUnavailableError`` at once when reconnection keeps failing and no
        connection is left idle: a health check need not wait for the pool's timeout."""
        if self.outage.since is None or pool.get_stats().get("pool_available", 0) > 0:
            return
        down = time.monotonic() - self.outage.since
        raise DatabaseUnavailableError(f"{self.server} unreachable for {down:.1f} s (reconnecting)")

    def _warn(self, error: BaseException | None) -> None:
        log.warning(
            "database_unavailable",
            server=self.server,
            down_seconds=round(time.monotonic() - (self.outage.since or time.monotonic()), 1),
            error=(
                "connections fail, though a new one answered just now"
                if error is None
                else f"{type(error).__name__}: {str(error).strip()}"
            ),
            fix=pooler_hint(error)
            or (
                f"check that PostgreSQL runs and accepts connections at {self.server},"
                " or point [database] url (INBOX_DATABASE_URL) at the right server;"
                f" reconnecting every {RECONNECT_SECONDS} s, warning every"
                f" {OUTAGE_LOG_SECONDS:g} s meanwhile"
            ),
        )

    def _connected(self) -> None:
        down = self.outage.recovered(time.monotonic())
        if down is not None:
            log.info("database_available", server=self.server, down_seconds=round(down, 1))


class AsyncPoolCare(_Care[AsyncConnectionPool[Any]]):
    """The care of an ``AsyncConnectionPool``; ``attach`` it once the pool exists."""

    async def _check(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if not _idle_socket_readable(conn):
            return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except psycopg.Error:
            # The others idle since the same restart are dead too: check them all now.
            if self.pool is not None:
                await self.pool.check()
            raise

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._connected()

    async def _reconnect_failed(self, pool: AsyncConnectionPool[Any]) -> None:
        if self.outage.failed(time.monotonic()):
            self._warn(await self._probe())
        # A pool that gave up waits for the next checkout to try again: try now.
        await pool.check()

    async def _probe(self) -> BaseException | None:
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.conninfo, **self.kwargs, connect_timeout=PROBE_TIMEOUT_SECONDS
            )
        except psycopg.Error as exc:
            return exc
        await conn.close()
        return None


class PoolCare(_Care[ConnectionPool[Any]]):
    """The care of a sync ``ConnectionPool``; ``attach`` it once the pool exists."""

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        if not _idle_socket_readable(conn):
            return
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            if self.pool is not None:
                self.pool.check()
            raise

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        self._connected()

    def _reconnect_failed(self, pool: ConnectionPool[Any]) -> None:
        if self.outage.failed(time.monotonic()):
            self._warn(self._probe())
        pool.check()

    def _probe(self) -> BaseException | None:
        try:
            conn = psycopg.Connection.connect(
                self.conninfo, **self.kwargs, connect_timeout=PROBE_TIMEOUT_SECONDS
            )
        except psycopg.Error as exc:
            return exc
        conn.close()
        return None
