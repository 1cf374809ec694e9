"""Helpers for your own tests: run your Router over the events waiting in a database.

::

    from inbox.testing import fresh_database
    from processors.testing import run_pending

    with fresh_database() as url:
        ...  # deliver or write events
        run_pending(url, router)  # every handler ran, and its transaction committed

The database helpers (a fresh migrated database, signed requests) are ``inbox.testing``.
"""

from __future__ import annotations

from typing import Any, LiteralString

import anyio
import psycopg

from inbox._core.settings import WorkerSettings
from inbox._core.sql import load_queries
from processors._router import Router
from processors._worker import Worker

__all__ = ["run_pending"]

COUNT_DUE: LiteralString = load_queries("processors.sql", "queries.sql")["count_due"]

# How often the queue is re-read while the worker runs: the wait ends as soon as it is empty.
_RECHECK_SECONDS = 0.02


def run_pending(
    url: str,
    router: Router,
    *,
    settings: WorkerSettings | None = None,
    timeout: float = 30.0,
) -> None:
    """Run a worker with ``router`` until no event may run now, then stop it gracefully.

    A handler that fails is retried later (its backoff), so it does not keep this waiting:
    look at ``inbox_attempts`` (or ``inbox events show``) for its error. Raises
    ``TimeoutError`` when events are still waiting after ``timeout`` seconds. Call it from
    synchronous code (it runs its own event loop).
    """
    worker = Worker(url, router, settings or WorkerSettings(), grace_seconds=timeout)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            try:
                with anyio.fail_after(timeout):
                    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                        # A database state has no event to await: it is re-read until it holds.
                        while await _due(conn):  # noqa: ASYNC110
                            await anyio.sleep(_RECHECK_SECONDS)
            finally:
                worker.request_stop()

    anyio.run(main)


async def _due(conn: psycopg.AsyncConnection[Any]) -> int:
    row = await (await conn.execute(COUNT_DUE)).fetchone()
    return int(row[0]) if row else 0
