"""What the receiver app tells its orchestrator: ``/livez``, ``/readyz``, and the state
``inbox serve`` reads for systemd.

Ready once its writer's pool has given a connection that answered (a warm-up started with
the app, or by the first readiness probe of an app mounted where no lifespan runs), and from
then on while the database answers, as ``/healthz`` checks it. Live while the process
serves: an answer at all says the event loop runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import anyio

from inbox._core.database.pool_care import RECONNECT_SECONDS
from inbox._core.errors import InboxError

__all__ = ["ReceiverProbes"]

# How often the app's event loop says it runs, while it serves under `inbox serve`.
BEAT_SECONDS = 1.0


class ReceiverProbes:
    """The receiver's readiness and the beat of its event loop (read from other threads)."""

    def __init__(self, ping: Callable[[], Awaitable[None]], timeout_seconds: float) -> None:
        self._ping = ping
        self._timeout = timeout_seconds
        # A loop blocked longer than a request may take answers no request in time.
        self.stalled_after = timeout_seconds + 5.0
        self.connected = False
        self._beat: float | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, *, beat: bool = False) -> None:
        """Begin the warm-up on the running loop (once), and with ``beat`` the loop's beat."""
        loop = asyncio.get_running_loop()
        if not self._tasks and not self.connected:
            self._tasks.append(loop.create_task(self._warm_up(), name="pg-inbox warm-up"))
        if beat:
            self._beat = time.monotonic()
            self._tasks.append(loop.create_task(self._beating(), name="pg-inbox beat"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def alive(self, now: float) -> bool:
        """The event loop has beaten lately (True before it beats at all: starting)."""
        return self._beat is None or now - self._beat <= self.stalled_after

    async def _warm_up(self) -> None:
        while True:
            try:
                with anyio.fail_after(self._timeout):
                    await self._ping()
            except (TimeoutError, InboxError):
                await anyio.sleep(RECONNECT_SECONDS)
            else:
                self.connected = True
                return

    async def _beating(self) -> None:
        while True:
            self._beat = time.monotonic()
            await anyio.sleep(BEAT_SECONDS)
