"""One handler's failure never takes another event's writes with it, in either savepoint mode.

``savepoints = "batch"`` runs a batch under one savepoint and, when a handler fails, undoes it
and runs the other events again, each isolated; ``"event"`` isolates every event from the
start. Both must leave every other event's business row exactly once.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import psycopg
import pytest

from processors import Event, Router
from tests._wait import scalar
from tests.processors._support import (
    NO_RETRY_SOON,
    all_attempted,
    attempts_beside,
    create_business_table,
    paid_ids,
    paying_router,
    run_until_empty,
    run_worker_until,
    settings,
    write_events,
)

EVENTS = 20
FAILING = 7  # the n of the event whose handler fails; events are claimed in n order


async def _raise_async(conn: Any) -> None:
    raise RuntimeError("card network said no")


def _raise_sync(conn: Any) -> None:
    raise RuntimeError("card network said no")


async def _swallow_db_error_async(conn: psycopg.AsyncConnection[Any]) -> None:
    # The mistake under test: the handler goes on in an aborted transaction.
    with contextlib.suppress(psycopg.errors.DivisionByZero):
        await conn.execute("select 1 / 0")


def _swallow_db_error_sync(conn: psycopg.Connection[Any]) -> None:
    with contextlib.suppress(psycopg.errors.DivisionByZero):
        conn.execute("select 1 / 0")


FAILURES = {
    ("async", "raise"): _raise_async,
    ("sync", "raise"): _raise_sync,
    ("async", "swallow"): _swallow_db_error_async,
    ("sync", "swallow"): _swallow_db_error_sync,
}
EXPECTED_ERROR = {"raise": "RuntimeError", "swallow": "HandlerLeftTransactionAbortedError"}


@pytest.mark.parametrize("mode", ["batch", "event"])
@pytest.mark.parametrize("kind", ["async", "sync"])
@pytest.mark.parametrize("failure", ["raise", "swallow"])
def test_a_failing_handler_leaves_every_other_effect_exactly_once(
    db_url: str, worker_url: str, mode: str, kind: str, failure: str
) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    calls: Counter[int] = Counter()
    router = paying_router(calls, FAILING, FAILURES[(kind, failure)], sync=kind == "sync")

    run_worker_until(
        worker_url,
        router,
        all_attempted(db_url, EVENTS),
        worker_settings=settings(savepoints=mode, **NO_RETRY_SOON),
    )

    failing_id = ids[FAILING]
    assert paid_ids(db_url) == [i for i in ids if i != failing_id]
    failed = [("failed", EXPECTED_ERROR[failure])]
    assert attempts_beside(db_url, ids, failing_id) == failed
    # What each mode costs: "batch" runs the events before the failure a second time (their
    # first writes were undone), "event" runs every handler once.
    if mode == "batch" and (kind, failure) == ("async", "swallow"):
        # Pipelined: the swallowed error surfaces at a later statement or the sync, naming
        # no handler, so every handler that ran by then runs again, the failing one too.
        assert [calls[n] for n in range(FAILING + 1)] == [2] * (FAILING + 1)
        assert set(calls.values()) <= {1, 2}
        return
    reruns = FAILING if mode == "batch" else 0
    assert calls == Counter({n: 2 if n < reruns else 1 for n in range(EVENTS)})


def test_a_batch_without_failures_runs_each_handler_once(db_url: str, worker_url: str) -> None:
    create_business_table(db_url)
    write_events(db_url, FAILING)  # n = 0 .. FAILING-1: no handler fails
    calls: Counter[int] = Counter()
    router = paying_router(calls, FAILING, _raise_async)

    run_until_empty(
        db_url, router, worker_url=worker_url, worker_settings=settings(savepoints="batch")
    )
    assert scalar(db_url, "select count(*) from payments") == FAILING
    assert calls == Counter(range(FAILING))


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_timeout_in_a_shared_batch_releases_none_of_the_events_it_undid(
    db_url: str, worker_url: str, kind: str
) -> None:
    # A handler that times out always ends past the batch's deadline. The events that ran
    # before it lost their writes with the shared savepoint; they must run again in this
    # batch, not be released unrun to wait for the next one.
    create_business_table(db_url)
    ids = write_events(db_url, 6)
    slow = 3
    router = Router()

    if kind == "async":

        @router.on("shop")
        async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
            if event.json()["n"] == slow:
                await conn.execute("select pg_sleep(30)")
            await conn.execute("insert into payments (event_id) values (%s)", [event.id])

    else:

        @router.on("shop")
        def pay_sync(event: Event, conn: psycopg.Connection[Any]) -> None:
            if event.json()["n"] == slow:
                conn.execute("select pg_sleep(30)")
            conn.execute("insert into payments (event_id) values (%s)", [event.id])

    metrics = run_worker_until(
        worker_url,
        router,
        all_attempted(db_url, 6),
        worker_settings=settings(savepoints="batch", handler_timeout_seconds=0.5, **NO_RETRY_SOON),
    )

    assert attempts_beside(db_url, ids, ids[slow]) == [("failed", "HandlerTimeoutError")]
    assert metrics.registry.get_sample_value(
        "inbox_attempts_total", {"source": "shop", "outcome": "released"}
    ) in (
        None,
        0.0,
    )
    assert metrics.registry.get_sample_value("inbox_batches_total") == 1.0


def test_after_a_failure_at_most_64_events_rerun_isolated_and_the_rest_wait(db_url: str) -> None:
    # A shared batch holds up to 256 events, but a transaction may keep only 64
    # subtransactions cheaply: after a failure, the first 64 others re-run isolated and the
    # rest are released unrun, to be claimed by the next batch.
    create_business_table(db_url)
    ids = write_events(db_url, 100)
    failing = 80
    calls: Counter[int] = Counter()
    router = paying_router(calls, failing, RuntimeError("card network said no"))

    metrics = run_worker_until(
        db_url,
        router,
        lambda: (
            scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 1
            and scalar(db_url, "select count(*) from inbox_attempts") == 100
        ),
        worker_settings=settings(**NO_RETRY_SOON),
    )

    assert _paid_once(db_url) == [i for i in ids if i != ids[failing]]
    assert attempts_beside(db_url, ids, ids[failing]) == [("failed", "RuntimeError")]
    released = metrics.registry.get_sample_value(
        "inbox_attempts_total", {"source": "shop", "outcome": "released"}
    )
    assert released == 100 - 1 - 64
    # Events 0-63 ran shared, then isolated; 64-79 shared, then (released) in the next batch.
    assert calls == Counter({n: 1 if n >= failing else 2 for n in range(100)})


def _paid_once(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select event_id, count(*) from payments group by 1 order by 1")
        counted = rows.fetchall()
    assert {n for _, n in counted} == {1}
    return [event_id for event_id, _ in counted]
