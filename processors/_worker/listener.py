"""Wake-ups: one dedicated autocommit LISTEN connection per worker process.

Notifications are hints, coalesced into one wake-up; the table is the truth. The listener
checks its own health (is the connection alive and still listening?) because a silently
dead listener is the bug every peer queue has shipped: without the check, a half-open TCP
connection would leave the workers on the fallback poll forever without anyone noticing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import psycopg

from inbox._core.database.outage import Outage
from inbox._core.logs import get_logger
from inbox._core.sql import NOTIFY_CHANNEL
from processors._model.decide import reconnect_delay
from processors._worker.metrics import WorkerMetrics

__all__ = ["Listener", "Wakeup"]

log = get_logger("processors.listener")

LISTEN: Any = psycopg.sql.SQL("listen {}").format(psycopg.sql.Identifier(NOTIFY_CHANNEL))
IS_LISTENING = "select %s = any(array(select pg_listening_channels()))"


class Wakeup:
    """A coalescing wake-up: any number of ``set()`` calls wake every current waiter once.

    A waiter takes ``current()`` *before* looking for work, then waits on it: a hint that
    arrives while it looks is not lost.
    """

    def __init__(self) -> None:
        self._event = anyio.Event()

    def current(self) -> anyio.Event:
        return self._event

    def set(self) -> None:
        event, self._event = self._event, anyio.Event()
        event.set()


class Listener:
    def __init__(
        self,
        dsn: str,
        wakeup: Wakeup,
        metrics: WorkerMetrics,
        *,
        health_interval_seconds: float,
        worker: str,
        on_connected: Callable[[], None] | None = None,
        on_up: Callable[[bool], None] | None = None,
        connect_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self._dsn = dsn
        # psycopg's connection arguments besides the URL (a connect_timeout).
        self._connect_kwargs = dict(connect_kwargs or {})
        self._wakeup = wakeup
        self._metrics = metrics
        self._health_interval = health_interval_seconds
        self._worker = worker
        self._on_connected = on_connected
        self._on_up = on_up
        self._rng = random.Random()
        self._outage = Outage()

    async def run(self) -> None:
        """Listen until cancelled, reconnecting with backoff."""
        try:
            await self._run()
        finally:
            self._up(False)  # stopped: nothing listens any more

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._dsn,
                    autocommit=True,
                    application_name=f"pg-inbox listener {self._worker}",
                    **self._connect_kwargs,
                )
                # Not `async with`: its exit awaits a rollback first, and a stopping worker's
                # cancellation interrupts that await, skipping the close. close() itself
                # never waits, so the connection is closed however the listener ends.
                try:
                    await conn.execute(LISTEN)
                    failures = 0
                    self._outage.recovered(time.monotonic())
                    self._up(True)
                    log.info("listener_connected", worker=self._worker)
                    # Anything committed while we were not listening: sweep now.
                    self._wakeup.set()
                    if self._on_connected is not None:
                        self._on_connected()
                    await self._listen(conn)
                finally:
                    await conn.close()
            except (psycopg.Error, OSError, TimeoutError) as exc:
                failures += 1
                self._up(False)
                self._metrics.listener_reconnects.inc()
                delay = reconnect_delay(failures, self._rng)
                if self._outage.failed(time.monotonic()):
                    log.warning(
                        "listener_lost",
                        worker=self._worker,
                        error=f"{type(exc).__name__}: {exc}",
                        retry_in_seconds=round(delay, 3),
                    )
                # The claim loops keep polling meanwhile; wake them so they sweep now.
                self._wakeup.set()
                await anyio.sleep(delay)

    def _up(self, up: bool) -> None:
        self._metrics.listener_up.set(1 if up else 0)
        if self._on_up is not None:
            self._on_up(up)

    async def _listen(self, conn: psycopg.AsyncConnection[Any]) -> None:
        while True:
            got_any = False
            async for _note in conn.notifies(timeout=self._health_interval):
                got_any = True
                self._metrics.notifications.inc()
                self._wakeup.set()
            if not got_any:
                await self._check_health(conn)

    async def _check_health(self, conn: psycopg.AsyncConnection[Any]) -> None:
        # A round trip on the listening connection itself, bounded in time: a half-open
        # connection fails here instead of waiting for notifications that never come.
        with anyio.fail_after(max(2.0, self._health_interval)):
            cursor = await conn.execute(IS_LISTENING, [NOTIFY_CHANNEL])
            row = await cursor.fetchone()
        if not row or not row[0]:
            raise psycopg.OperationalError("the listener connection is no longer listening")
        self._metrics.listener_checks.inc()
