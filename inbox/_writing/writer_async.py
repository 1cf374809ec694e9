"""``AsyncInboxWriter``: the async twin of ``InboxWriter`` (Starlette, FastAPI, ...).

The logic lives in ``inbox._writing.plan``; this shell only awaits the I/O.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from inbox._core.db import translate_driver_errors
from inbox._core.errors import InboxError
from inbox._core.logs import get_logger
from inbox._core.pool_care import AsyncPoolCare
from inbox._writing.groups import WriteGroups
from inbox._writing.plan import (
    MAX_WRITE_ROUNDS,
    NOTIFY_WORK,
    PING,
    NotifyCoalescer,
    WriteResult,
    owned_pool_options,
    prepare_write,
    read_result,
    write_query,
)
from inbox._writing.writer import NotifyMode

__all__ = ["AsyncInboxWriter"]

log = get_logger("inbox.writer")


class AsyncInboxWriter:
    """Appends raw webhooks to the inbox log from async code; see ``InboxWriter``.

    Use it as ``async with AsyncInboxWriter(dsn) as w`` or call ``await w.open()`` first
    (the first write opens it too).
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: AsyncConnectionPool | None = None,
        notify: NotifyMode = "after_commit",
        notify_interval_seconds: float = 0.01,
        min_size: int = 1,
        max_size: int = 10,
        timeout_seconds: float = 5.0,
        connection_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self._owns_pool = pool is None
        self._care: AsyncPoolCare | None = None
        if pool is None:
            if dsn is None:
                raise TypeError("AsyncInboxWriter needs a connection string or pool=")
            options = owned_pool_options(
                min_size=min_size,
                max_size=max_size,
                timeout_seconds=timeout_seconds,
                connection_kwargs=connection_kwargs,
            )
            self._care = AsyncPoolCare(dsn)
            pool = AsyncConnectionPool(dsn, open=False, **options, **self._care.options())
            self._care.attach(pool)
        elif dsn is not None:
            raise TypeError("AsyncInboxWriter takes a connection string or pool=, not both")
        self._pool: AsyncConnectionPool = pool
        self._opened = not self._owns_pool
        self._notify = notify
        self._coalescer = NotifyCoalescer(notify_interval_seconds)
        self._trailing: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # Standalone writes are group-committed. A few group statements in flight keep the
        # server busy; more only shrink the groups (measured with 16 and 64 writers on 2
        # cores: 4 in flight beat 1, 8 and 16); the other connections serve the writes that
        # go singly (duplicates, failures).
        self._groups = WriteGroups(
            pool, self._write_one, max_in_flight=max(1, min(4, pool.max_size // 2))
        )

    async def open(self) -> None:
        if not self._opened:
            with translate_driver_errors("opening the writer's pool"):
                await self._pool.open()
            self._opened = True

    async def write(
        self,
        source: str,
        key: str,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        event_type: str | None = None,
        verifier: str | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> WriteResult:
        """Append one delivery; see ``InboxWriter.write``."""
        in_callers_txn = conn is not None and not conn.autocommit
        params = prepare_write(
            source=source,
            key=key,
            body=body,
            headers=headers,
            event_type=event_type,
            verifier=verifier,
            notify_in_transaction=self._notify == "in_transaction"
            or (in_callers_txn and self._notify != "off"),
        )
        with translate_driver_errors(f"writing {source}:{key}"):
            if conn is not None:
                result = await self._run(conn, params)
            else:
                await self.open()
                if params["notify"]:
                    result = await self._write_one(params)
                else:
                    result = await self._groups.write(params)
        if result.is_new and not params["notify"] and not in_callers_txn and self._notify != "off":
            await self._after_commit()
        return result

    async def ping(self) -> None:
        """Check that the database answers and holds the inbox schema (health checks).

        Raises ``DatabaseUnavailableError``, or ``MigrationError`` when the schema is missing.
        """
        if self._care is not None:
            self._care.known_down(self._pool)
        with translate_driver_errors("checking the database"):
            await self.open()
            async with self._pool.connection() as conn:
                await conn.execute(PING)

    async def _write_one(self, params: dict[str, Any]) -> WriteResult:
        """One write on a connection of its own, committed."""
        async with self._pool.connection() as own:
            result = await self._run(own, params)
            if not own.autocommit:
                await own.commit()
        return result

    async def _run(self, conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> WriteResult:
        for round_no in range(MAX_WRITE_ROUNDS):
            # The caller's connection may have any row factory; ours reads tuples.
            cursor = conn.cursor(row_factory=tuple_row)
            await cursor.execute(write_query(round_no), params)
            result = read_result(await cursor.fetchone())
            if result is not None:
                return result
        raise InboxError(f"could not write or find {params['source']}:{params['key']}")

    async def _after_commit(self) -> None:
        delay = self._coalescer.after_commit(time.monotonic())
        if delay == 0.0:
            await self._send_notify()
        elif delay is not None:
            self._trailing = asyncio.get_running_loop().call_later(delay, self._start_trailing)

    def _start_trailing(self) -> None:
        task = asyncio.get_running_loop().create_task(self._send_trailing())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_trailing(self) -> None:
        if self._coalescer.take_trailing(time.monotonic()):
            await self._send_notify()

    async def _send_notify(self) -> None:
        # A hint only: a lost notification costs latency, never an event.
        try:
            async with self._pool.connection() as conn:
                await conn.execute(NOTIFY_WORK)
                if not conn.autocommit:
                    await conn.commit()
        except (psycopg.Error, OSError) as exc:
            log.warning("notify_failed", error=str(exc))

    async def close(self) -> None:
        """Send a pending wake-up now, and close the pool if the writer owns it."""
        trailing, self._trailing = self._trailing, None
        if trailing is not None:
            trailing.cancel()
        await self._groups.drain()
        await self._send_trailing()  # a no-op unless a trailing notify is still owed
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._owns_pool and self._opened:
            await self._pool.close()

    async def __aenter__(self) -> AsyncInboxWriter:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
