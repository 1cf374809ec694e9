"""The rehearsals the console asks for: it has no handlers, so it queues a request
(``inbox_rehearsal_requests``) and a worker whose router handles the events' sources runs
it here, counting its progress and leaving the report for the page.

A worker process runs one rehearsal at a time, beside its claim loops and on connections
of its own: a rehearsal never takes a claim, so live work goes on while it runs.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, LiteralString

import anyio
import psycopg
from psycopg.types.json import Jsonb

from inbox._core.logs import get_logger
from inbox._core.sql import load_queries
from processors._model.router import Router
from processors._rehearsal.run import rehearse_async

__all__ = ["POLL_SECONDS", "RehearsalRequests"]

log = get_logger("processors.rehearsal")

_QUERIES = load_queries("processors.sql", "queries.sql")

# How often a worker looks for a requested rehearsal: an operator waits this long at most
# for it to start, for one indexed query on a table that is nearly always empty.
POLL_SECONDS = 2.0
# How often a running rehearsal writes how many events it has done (the page polls).
PROGRESS_SECONDS = 1.0


def _q(name: str) -> LiteralString:
    return _QUERIES[name]


class RehearsalRequests:
    """Runs the requested rehearsals that ``router`` can run, as worker ``name``."""

    def __init__(
        self,
        dsn: str,
        router: Router,
        name: str,
        *,
        connect: Mapping[str, Any] | None = None,
        timeout_seconds: float = 30.0,
    ) -> None:
        self._dsn = dsn
        self._router = router
        self._name = name
        self._connect = dict(connect or {})
        self._timeout = timeout_seconds
        self.sources = sorted({route.source for route in router.routes})

    async def serve(self) -> None:
        """Take and run requests until cancelled, on one connection of its own, remade
        after a failure (the claim loops report outages)."""
        if not self.sources:
            return
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            while True:
                try:
                    if conn is None or conn.closed:
                        conn = await self._connection()
                    while await self.run_one(conn):
                        pass
                except (psycopg.Error, OSError):
                    if conn is not None:
                        await conn.close()
                    conn = None
                await anyio.sleep(POLL_SECONDS)
        finally:
            if conn is not None:
                await conn.close()

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        conn = await psycopg.AsyncConnection.connect(
            self._dsn,
            autocommit=True,
            application_name=f"pg-inbox rehearsals {self._name}",
            **self._connect,
        )
        conn.prepare_threshold = None
        return conn

    async def run_one(self, conn: psycopg.AsyncConnection[Any] | None = None) -> bool:
        """Run the oldest request this worker can run, if any (on ``conn``, an autocommit
        connection, else one of its own): whether there was one."""
        if conn is None:
            own = await self._connection()
            try:  # closed in `finally`, not by `async with`: see processors/_worker/listener.py
                return await self.run_one(own)
            finally:
                await own.close()
        cursor = await conn.execute(
            _q("rehearsal_take"), {"worker": self._name, "sources": self.sources}
        )
        row = await cursor.fetchone()
        if row is None:
            return False
        replay_id, event_ids, seconds_left = row
        await self._run(conn, int(replay_id), list(event_ids), float(seconds_left))
        return True

    async def _finish(
        self,
        conn: psycopg.AsyncConnection[Any],
        replay_id: int,
        state: str,
        done: int,
        report: Jsonb | None,
        error: str | None,
    ) -> None:
        params = {
            "replay_id": replay_id,
            "state": state,
            "done": done,
            "report": report,
            "error": error,
        }
        await conn.execute(_q("rehearsal_finish"), params)

    async def _run(
        self,
        conn: psycopg.AsyncConnection[Any],
        replay_id: int,
        event_ids: Sequence[int],
        seconds_left: float,
    ) -> None:
        log.info("rehearsal_started", worker=self._name, replay_id=replay_id, events=len(event_ids))
        written = time.monotonic()
        done = 0

        async def progress(n: int) -> None:
            nonlocal written, done
            done = n
            if time.monotonic() - written >= PROGRESS_SECONDS:
                written = time.monotonic()
                await conn.execute(_q("rehearsal_progress"), {"replay_id": replay_id, "done": n})

        state, report, error = "failed", None, None
        try:
            with anyio.move_on_after(seconds_left) as scope:
                try:
                    rehearsal = await rehearse_async(
                        self._dsn,
                        self._router,
                        event_ids,
                        timeout_seconds=self._timeout,
                        progress=progress,
                    )
                    state, report = "done", Jsonb(rehearsal.to_json())
                except (psycopg.Error, OSError) as exc:
                    error = f"{type(exc).__name__}: {exc}"
            if scope.cancelled_caught:
                state = "expired"
                error = f"the time limit passed after {done} of {len(event_ids)} events"
        except anyio.get_cancelled_exc_class():
            # The worker is stopping: say so now rather than leave the page saying
            # "running" until the deadline.
            error = f"worker {self._name} stopped after {done} of {len(event_ids)} events"
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._finish(conn, replay_id, "failed", done, None, error)
            raise
        await self._finish(conn, replay_id, state, done, report, error)
        log.info("rehearsal_finished", worker=self._name, replay_id=replay_id, state=state)
