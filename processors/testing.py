"""Helpers for your own tests: run your Router over the events waiting in a database.

    from inbox.testing import fresh_database
    from processors.testing import run_pending, run_until

    with fresh_database() as url:
        ...  # deliver or write events
        run_pending(url, router)  # every handler ran, and its transaction committed
        run_until(url, router, lambda: dead_letters(url) == 1)  # your own condition
        report = rehearse(url, router, [event_id])  # what a replay would do; rolled back

The database helpers (a fresh migrated database, signed requests) are ``inbox.testing``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, LiteralString

import anyio
import psycopg

from inbox._core.config.settings import WorkerSettings
from inbox._core.database.pooler import PoolerMode
from inbox._core.sql import load_queries
from processors._model.router import Router
from processors._rehearsal.report import EventRehearsal, Rehearsal, TableWrites
from processors._rehearsal.run import rehearse as _rehearse
from processors._worker.metrics import WorkerMetrics
from processors._worker.worker import Worker

__all__ = ["EventRehearsal", "Rehearsal", "TableWrites", "rehearse", "run_pending", "run_until"]

COUNT_DUE: LiteralString = load_queries("processors.sql", "queries.sql")["count_due"]

# How often the state is re-read while the worker runs: the wait ends as soon as it holds.
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

    async def nothing_due() -> None:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        try:  # closed in `finally`, not by `async with`: see processors/_worker/listener.py
            while await _due(conn):  # noqa: ASYNC110 (a database state: re-read until it holds)
                await anyio.sleep(_RECHECK_SECONDS)
        finally:
            await conn.close()

    worker = Worker(url, router, settings or WorkerSettings(), grace_seconds=timeout)
    _run(worker, nothing_due, timeout)


def run_until(
    url: str,
    router: Router,
    condition: Callable[[], bool],
    *,
    settings: WorkerSettings | None = None,
    concurrency: int = 1,
    timeout: float = 30.0,
    pooler: PoolerMode = "auto",
    listen_dsn: str | None = None,
) -> WorkerMetrics:
    """Run a worker with ``router`` until ``condition()`` holds (e.g. an event is
    dead-lettered after its retries), then stop it gracefully; return its metrics.

    ``condition`` is called in a thread, again and again while the worker runs: a query
    of your database is the usual one. Raises ``TimeoutError`` when it still does not hold
    after ``timeout`` seconds. Call it from synchronous code (it runs its own event loop).
    ``pooler`` and ``listen_dsn``: as ``Worker``'s, for a URL through a transaction pooler.
    """

    async def holds() -> None:
        while not await anyio.to_thread.run_sync(condition):  # noqa: ASYNC110 (as above)
            await anyio.sleep(_RECHECK_SECONDS)

    worker = Worker(
        url,
        router,
        settings or WorkerSettings(),
        concurrency=concurrency,
        pooler=pooler,
        listen_dsn=listen_dsn,
    )
    _run(worker, holds, timeout)
    return worker.metrics


def rehearse(
    url: str, router: Router, event_ids: Sequence[int], *, timeout_seconds: float = 30.0
) -> Rehearsal:
    """Run ``router``'s handlers on stored events as a replay would, each in a transaction
    that rolls back, and say what each would do: ``report.events[i].outcome`` (succeeded,
    failed, retry, skipped), its error and traceback, and the rows it would write per
    table (``writes``). Nothing is claimed, queued or recorded: the database is left as
    it was. Handlers run only when marked ``rehearse=True`` (or their router's default
    says so); the others are reported as skipped. ``timeout_seconds`` bounds each handler
    and each of its statements. Call it from synchronous code (it runs its own event
    loop).
    """
    return _rehearse(url, router, event_ids, timeout_seconds=timeout_seconds)


def _run(worker: Worker, wait: Callable[[], Awaitable[None]], timeout: float) -> None:
    """Run ``worker`` while ``wait()`` waits, then stop it gracefully; ``TimeoutError``
    (once the worker has stopped) when the wait took more than ``timeout`` seconds."""

    async def main() -> bool:
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            try:
                with anyio.move_on_after(timeout) as deadline:
                    await wait()
            finally:
                worker.request_stop()
        return deadline.cancelled_caught

    if anyio.run(main):
        raise TimeoutError(f"the worker's wait did not end within {timeout} s")


async def _due(conn: psycopg.AsyncConnection[Any]) -> int:
    row = await (await conn.execute(COUNT_DUE)).fetchone()
    return int(row[0]) if row else 0
