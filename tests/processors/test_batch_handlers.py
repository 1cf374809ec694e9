"""Batch handlers (``Router.on_batch``): one call takes every event of a claimed batch routed
to it from one source, in the claim transaction. A failure in that call names no event, so
the pass is undone and the handler is called again once per event, each isolated: these
tests hold that the failure then lands on the event that causes it, that every other event's
rows commit exactly once, and that a timeout leaves the connection (and the batch) usable.
"""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg
import pytest
from psycopg import pq

from inbox import InboxWriter
from processors import Event, Retry, Router
from tests._wait import scalar
from tests.processors._support import (
    NO_RETRY_SOON,
    all_attempted,
    attempt_outcomes,
    attempts_beside,
    create_business_table,
    paid_ids,
    run_worker_until,
    settings,
    write_events,
)

EVENTS = 12
ODD_ONE = 5  # the n of the event the batch handler fails on

PAY_MANY = "insert into payments (event_id) values (%s)"


def handled_by(url: str) -> list[tuple[str, str]]:
    """Each attempt's (outcome, handler), in attempt order."""
    with psycopg.connect(url) as conn:
        return [
            (str(outcome), str(handler))
            for outcome, handler in conn.execute(
                "select outcome, handler from inbox_attempts order by id"
            ).fetchall()
        ]


def test_one_call_takes_the_whole_batch_in_claim_order_and_commits_with_it(
    db_url: str,
) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    calls: list[list[int]] = []
    router = Router()

    @router.on_batch("shop")
    async def pay_all(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
        calls.append([event.id for event in events])
        async with conn.cursor() as cursor:
            await cursor.executemany(PAY_MANY, [(event.id,) for event in events])

    metrics = run_worker_until(db_url, router, all_attempted(db_url, EVENTS))

    assert calls == [ids]
    assert paid_ids(db_url) == ids
    assert handled_by(db_url) == [("processed", f"{__name__}.{pay_all.__qualname__}")] * EVENTS
    assert metrics.registry.get_sample_value("inbox_batches_total") == 1.0


@pytest.mark.parametrize("how", ["server error", "exception", "retry"])
def test_a_failure_is_charged_to_its_own_event_and_the_rest_commit_once(
    db_url: str, how: str
) -> None:
    # "server error": the odd one's row breaks NOT NULL, which surfaces in the executemany
    # (or at the pipeline's sync); "exception" and "retry": the handler raises, after its
    # writes were sent, whenever the odd one is in its list.
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    odd = ids[ODD_ONE]
    calls: list[list[int]] = []
    router = Router()

    @router.on_batch("shop")
    async def pay_all(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
        calls.append([event.id for event in events])
        rows = [(None if how == "server error" and e.id == odd else e.id,) for e in events]
        async with conn.cursor() as cursor:
            await cursor.executemany(PAY_MANY, rows)
        if any(event.id == odd for event in events):
            if how == "exception":
                raise ValueError(f"event {odd} cannot be paid")
            if how == "retry":
                raise Retry(after=3600, reason="the bank says later")

    run_worker_until(
        db_url,
        router,
        all_attempted(db_url, EVENTS),
        worker_settings=settings(**NO_RETRY_SOON),
    )

    assert paid_ids(db_url) == [i for i in ids if i != odd]
    expected = {"server error": "NotNullViolation", "exception": "ValueError", "retry": "Retry"}
    outcome = "retry" if how == "retry" else "failed"
    assert attempts_beside(db_url, ids, odd) == [(outcome, expected[how])]
    # The whole batch once, undone; then each event alone, in claim order.
    assert calls == [ids] + [[i] for i in ids]


def test_a_timeout_is_charged_to_the_slow_event_and_the_connection_kept(db_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    odd = ids[ODD_ONE]
    router = Router()

    @router.on_batch("shop", timeout_seconds=0.5)
    async def pay_all(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
        async with conn.cursor() as cursor:
            await cursor.executemany(PAY_MANY, [(event.id,) for event in events])
            if any(event.id == odd for event in events):
                await cursor.execute("select pg_sleep(30)")

    metrics = run_worker_until(
        db_url,
        router,
        all_attempted(db_url, EVENTS),
        worker_settings=settings(**NO_RETRY_SOON),
    )

    assert attempts_beside(db_url, ids, odd) == [("failed", "HandlerTimeoutError")]
    assert paid_ids(db_url) == [i for i in ids if i != odd]
    # One batch, committed on the connection the timeouts happened on.
    assert metrics.registry.get_sample_value("inbox_batches_total") == 1.0
    assert metrics.registry.get_sample_value("inbox_worker_reconnects_total") in (None, 0.0)


def test_each_source_gets_its_own_call_beside_per_event_and_sync_handlers(db_url: str) -> None:
    create_business_table(db_url)
    # One claimed batch: two sources to one batch route, a per-event route, and a sync
    # batch route, interleaved by claim order.
    written: dict[str, list[int]] = {"shop": [], "web": [], "till": [], "desk": []}
    with InboxWriter(db_url) as writer:
        for n in range(4):
            for source, event_type in [
                ("shop", "order.paid"),
                ("web", "order.paid"),
                ("till", "refund"),
                ("desk", "note"),
            ]:
                result = writer.write(source, f"key-{n}", b"{}", event_type=event_type)
                written[source].append(result.event_id)
    shop, web, till, desk = written.values()
    calls: list[tuple[str, list[int]]] = []
    sync_saw: list[pq.PipelineStatus] = []
    router = Router()

    @router.on_batch("*", "order.*")
    async def pay_all(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
        calls.append(("orders", [event.id for event in events]))
        async with conn.cursor() as cursor:
            await cursor.executemany(PAY_MANY, [(event.id,) for event in events])

    @router.on_batch("till")
    def refund_all(events: list[Event], conn: psycopg.Connection[Any]) -> None:
        calls.append(("refunds", [event.id for event in events]))
        sync_saw.append(pq.PipelineStatus(conn.pgconn.pipeline_status))
        with conn.cursor() as cursor:
            cursor.executemany(PAY_MANY, [(event.id,) for event in events])

    @router.on("desk")
    async def note(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        calls.append(("note", [event.id]))
        await conn.execute(PAY_MANY, [event.id])

    run_worker_until(db_url, router, all_attempted(db_url, 16))

    # A call per (route, source), made at the first of its events; the per-event handler
    # runs for each of its events where the claim order puts it.
    assert calls == [
        ("orders", shop),
        ("orders", web),
        ("refunds", till),
        ("note", desk[:1]),
        ("note", desk[1:2]),
        ("note", desk[2:3]),
        ("note", desk[3:]),
    ]
    assert sync_saw == [pq.PipelineStatus.OFF]
    assert paid_ids(db_url) == sorted(shop + web + till + desk)
    assert attempt_outcomes(db_url) == {i: [("processed", None)] for i in shop + web + till + desk}


def test_with_a_savepoint_per_event_it_is_called_once_per_event(db_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, 6)
    calls: list[list[int]] = []
    router = Router()

    @router.on_batch("shop")
    def pay_all(events: list[Event], conn: psycopg.Connection[Any]) -> None:
        calls.append([event.id for event in events])
        with conn.cursor() as cursor:
            cursor.executemany(PAY_MANY, [(event.id,) for event in events])

    run_worker_until(
        db_url, router, all_attempted(db_url, 6), worker_settings=settings(savepoints="event")
    )

    assert calls == [[i] for i in ids]
    assert paid_ids(db_url) == ids


def test_a_sync_batch_handler_that_swallows_an_error_fails_its_event_only(db_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    odd = ids[ODD_ONE]
    router = Router()

    @router.on_batch("shop")
    def pay_all(events: list[Event], conn: psycopg.Connection[Any]) -> None:
        for event in events:
            # The mistake under test: going on in an aborted transaction.
            with contextlib.suppress(psycopg.errors.NotNullViolation):
                conn.execute(PAY_MANY, [None if event.id == odd else event.id])

    run_worker_until(
        db_url,
        router,
        all_attempted(db_url, EVENTS),
        worker_settings=settings(**NO_RETRY_SOON),
    )

    assert attempts_beside(db_url, ids, odd) == [("failed", "HandlerLeftTransactionAbortedError")]
    assert paid_ids(db_url) == [i for i in ids if i != odd]
    assert scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 1
