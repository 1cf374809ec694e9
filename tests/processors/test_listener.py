"""Wake-ups: the listener survives the loss of its connection, and says so in its metrics."""

from __future__ import annotations

import gc
import warnings
from typing import Any

import anyio
import psycopg
import pytest

from inbox import InboxWriter
from processors import Event, Router, Worker
from processors._worker.listener import Listener, Wakeup
from processors._worker.metrics import WorkerMetrics
from tests._proxy import HoldingProxy
from tests._wait import await_for, scalar
from tests.processors._support import settings


def test_terminated_listener_reconnects_and_events_keep_flowing(
    db_url: str, worker_url: str
) -> None:
    router = Router()
    handled: list[int] = []

    @router.on("shop")
    async def record(event: Event, conn: Any) -> None:
        handled.append(event.id)

    # A poll so slow that only wake-ups can explain prompt processing.
    worker = Worker(worker_url, router, settings(poll_interval_seconds=60))
    metrics = worker.metrics.registry

    def sample(name: str) -> float:
        value = metrics.get_sample_value(name)
        return 0.0 if value is None else value

    def write(key: str) -> None:
        with InboxWriter(db_url) as writer:
            writer.write("shop", key, b"{}")

    def terminate_listener() -> int:
        with psycopg.connect(db_url, autocommit=True) as conn:
            rows = conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity"
                " where application_name like 'pg-inbox listener%%'"
                " and datname = current_database()"
            ).fetchall()
        return len(rows)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            await await_for(
                lambda: sample("inbox_listener_up") == 1, within=30, what="the listener"
            )
            await anyio.to_thread.run_sync(write, "before")
            await await_for(lambda: len(handled) == 1, within=30, what="the first event")

            assert await anyio.to_thread.run_sync(terminate_listener) == 1
            await await_for(
                lambda: sample("inbox_listener_reconnects_total") >= 1,
                within=30,
                what="the outage to show in the metrics",
            )
            await await_for(
                lambda: sample("inbox_listener_up") == 1, within=30, what="the listener back"
            )
            await anyio.to_thread.run_sync(write, "after")
            await await_for(lambda: len(handled) == 2, within=30, what="the second event")
            worker.request_stop()

    anyio.run(main)
    assert scalar(db_url, "select count(*) from inbox_work") == 0


@pytest.mark.parametrize("when", ["listening", "mid-statement"])
def test_a_cancelled_listener_closes_its_connection(db_url: str, when: str) -> None:
    """Cancelled (a worker stopping) while it waits for notifications, or while a statement
    waits for its answer (the health check), the listener closes its connection: none is
    left for the garbage collector to find open."""
    proxy = HoldingProxy(db_url)
    wakeup = Wakeup()
    metrics = WorkerMetrics()
    # Listening: no health check comes before the cancel. Mid-statement: one every 50 ms.
    interval = 60.0 if when == "listening" else 0.05
    listener = Listener(
        proxy.conninfo(), wakeup, metrics, health_interval_seconds=interval, worker="test"
    )

    def up() -> bool:
        return metrics.registry.get_sample_value("inbox_listener_up") == 1

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.run)
            await await_for(up, within=30, what="the listener")
            if when == "mid-statement":
                proxy.hold()
                await await_for(proxy.held.is_set, within=30, what="the health check in flight")
            tg.cancel_scope.cancel()

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            anyio.run(main)
            gc.collect()
        assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
        assert proxy.all_closed.wait(10), "the listener's connection is still open"
    finally:
        proxy.close()
