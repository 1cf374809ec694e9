"""A batch's async handlers share one psycopg pipeline: their statements go out without
waiting, and one sync collects them. A server error there names no handler, so the batch is
undone and re-run isolated; these tests hold that every error still lands on the handler
whose statement it is, that the other events' effects commit exactly once, and that a
timeout inside the pipeline leaves the connection usable.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
import pytest
from psycopg import pq

from processors import Event, Retry, Router
from processors._running.pipeline_send import HOLD_MAX
from tests._wait import scalar
from tests.processors._support import (
    NO_RETRY_SOON,
    all_attempted,
    attempt_outcomes,
    attempts_beside,
    create_business_table,
    paid_ids,
    paying_router,
    run_worker_until,
    settings,
    write_events,
)

EVENTS = 12
ODD_ONE = 5  # the n of the event whose handler misbehaves


def test_a_failing_statement_is_charged_to_its_own_handler_only(db_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    calls: Counter[int] = Counter()
    pipelined: list[bool] = []
    router = Router()

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        n = event.json()["n"]
        calls[n] += 1
        pipelined.append(conn.pgconn.pipeline_status != pq.PipelineStatus.OFF)
        # The odd one's INSERT breaks payments' NOT NULL: a server error that surfaces in a
        # later handler's statement or at the sync, after that handler has returned.
        await conn.execute(
            "insert into payments (event_id) values (%s)", [None if n == ODD_ONE else event.id]
        )

    run_worker_until(
        db_url,
        router,
        all_attempted(db_url, EVENTS),
        worker_settings=settings(**NO_RETRY_SOON),
    )

    odd = ids[ODD_ONE]
    assert paid_ids(db_url) == [i for i in ids if i != odd]
    assert attempts_beside(db_url, ids, odd) == [("failed", "NotNullViolation")]
    # The first pass ran in one pipeline until the error surfaced (past the odd one); then
    # every handler ran again, isolated (no pipeline).
    first_pass = pipelined.index(False)
    assert first_pass > ODD_ONE
    assert pipelined == [True] * first_pass + [False] * EVENTS
    assert calls == Counter({n: 2 if n < first_pass else 1 for n in range(EVENTS)})


def test_retry_raised_after_writes_were_queued_undoes_them(db_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    calls: Counter[int] = Counter()
    router = paying_router(calls, ODD_ONE, Retry(after=3600, reason="the bank says later"))

    run_worker_until(db_url, router, all_attempted(db_url, EVENTS))

    odd = ids[ODD_ONE]
    assert paid_ids(db_url) == [i for i in ids if i != odd]
    assert attempts_beside(db_url, ids, odd) == [("retry", "Retry")]
    assert scalar(db_url, "select attempts from inbox_work where event_id = %s", [odd]) == 0
    # The sync was clean, so the Retry is the handler's own: it stands, and only the
    # events before it (whose writes the undo took) run again.
    assert calls == Counter({n: 2 if n < ODD_ONE else 1 for n in range(EVENTS)})


@pytest.mark.parametrize("how", ["awaits", "queues"])
def test_a_timeout_inside_the_pipeline_is_charged_and_the_connection_kept(
    db_url: str, how: str
) -> None:
    # "awaits": the slow handler waits for its statement's result (a fetch syncs) and times
    # out itself; "queues": it only queues the statement and returns, so the pass's closing
    # sync is what waits, and is cancelled at the handlers' deadline.
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    router = Router()

    @router.on("shop", timeout_seconds=0.5)
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        if event.json()["n"] == ODD_ONE:
            cursor = await conn.execute("select pg_sleep(30)")
            if how == "awaits":
                await cursor.fetchone()
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])

    metrics = run_worker_until(
        db_url,
        router,
        all_attempted(db_url, EVENTS),
        worker_settings=settings(**NO_RETRY_SOON),
    )
    odd = ids[ODD_ONE]
    assert attempts_beside(db_url, ids, odd) == [("failed", "HandlerTimeoutError")]
    assert paid_ids(db_url) == [i for i in ids if i != odd]
    # One batch, committed on the connection the timeout happened on: no reconnect, and
    # nothing released to wait for a later batch.
    assert metrics.registry.get_sample_value("inbox_batches_total") == 1.0
    assert metrics.registry.get_sample_value("inbox_worker_reconnects_total") in (None, 0.0)
    assert metrics.registry.get_sample_value(
        "inbox_attempts_total", {"source": "shop", "outcome": "released"}
    ) in (
        None,
        0.0,
    )


def test_sync_handlers_meet_no_open_pipeline_and_reads_see_the_batch(db_url: str) -> None:
    create_business_table(db_url)
    # Async (shop) and sync (till) handlers in one batch.
    paid = write_events(db_url, 6)
    refunded = write_events(db_url, 6, source="till")
    seen_by_sync: list[pq.PipelineStatus] = []
    counted: list[int] = []
    router = Router()

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])
        # A read: psycopg syncs the pipeline to fetch it, and it sees this batch's writes.
        cursor = await conn.execute("select count(*) from payments")
        row = await cursor.fetchone()
        assert row is not None
        counted.append(row[0])

    @router.on("till")
    def refund(event: Event, conn: psycopg.Connection[Any]) -> None:
        seen_by_sync.append(pq.PipelineStatus(conn.pgconn.pipeline_status))
        conn.execute("insert into payments (event_id) values (%s)", [event.id])

    run_worker_until(db_url, router, all_attempted(db_url, 12))

    assert paid_ids(db_url) == sorted(paid + refunded)
    assert seen_by_sync == [pq.PipelineStatus.OFF] * 6
    # One batch, the async handlers first (claimed in id order): each read its own write.
    assert counted == [1, 2, 3, 4, 5, 6]
    outcomes = attempt_outcomes(db_url)
    assert outcomes == {i: [("processed", None)] for i in paid + refunded}


def test_a_statement_larger_than_the_sockets_buffers_is_sent_whole_before_the_sync(
    db_url: str,
) -> None:
    # psycopg (3.3.9) ends a pipeline's send once nothing is left to queue, even when libpq
    # still holds unsent bytes, and then waits for the sync's results only: with a statement
    # larger than the kernel's socket buffers (a few hundred KB on a Unix socket, 4 MB over
    # TCP here), the server waits for the rest of it and the worker for the results, until
    # the handler's time limit. A webhook's body stored by its handler is such a statement.
    create_business_table(db_url)
    ids = write_events(db_url, 3)
    size = 16 * 1024 * 1024
    router = Router()

    @router.on("shop", timeout_seconds=10)
    async def keep(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(
            "insert into payments (event_id, note) values (%s, %s)", [event.id, "x" * size]
        )

    metrics = run_worker_until(
        db_url,
        router,
        all_attempted(db_url, 3),
        worker_settings=settings(**NO_RETRY_SOON),
    )

    assert attempt_outcomes(db_url) == {i: [("processed", None)] for i in ids}
    assert (
        scalar(db_url, "select array_agg(length(note) order by event_id) from payments")
        == [size] * 3
    )
    # One pipelined batch, on one connection: no time limit was reached on the way.
    assert metrics.registry.get_sample_value("inbox_batches_total") == 1.0
    assert metrics.registry.get_sample_value("inbox_worker_reconnects_total") in (None, 0.0)


def test_held_statements_keep_their_place_among_reads_and_savepoints(db_url: str) -> None:
    # The shared pass holds statements in the worker and sends them together
    # (processors._running.pipeline_send): more than it holds at once, the same statement past
    # psycopg's prepare threshold, a read, and a savepoint the handler rolls back must all
    # reach the server in the order the handler made them.
    create_business_table(db_url)
    ids = write_events(db_url, 4)
    writes = 2 * HOLD_MAX + 3
    counted: list[int] = []
    pipelined: list[bool] = []
    router = Router()

    class Undone(Exception):
        pass

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        pipelined.append(conn.pgconn.pipeline_status != pq.PipelineStatus.OFF)
        for n in range(writes):
            await conn.execute(
                "insert into payments (event_id, amount, note) values (%s, %s, 'held')",
                [event.id, n],
            )
        cursor = await conn.execute("select count(*) from payments where event_id = %s", [event.id])
        row = await cursor.fetchone()
        assert row is not None
        counted.append(row[0])
        # A savepoint taken after the writes above: rolling back to it keeps them.
        try:
            async with conn.transaction():
                await conn.execute(
                    "insert into payments (event_id, note) values (%s, 'undone')", [event.id]
                )
                raise Undone
        except Undone:
            pass
        await conn.execute("insert into payments (event_id, note) values (%s, 'after')", [event.id])

    run_worker_until(db_url, router, all_attempted(db_url, 4))

    assert attempt_outcomes(db_url) == {i: [("processed", None)] for i in ids}
    assert pipelined == [True] * 4
    assert counted == [writes] * 4
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "select event_id, note, array_agg(amount order by amount) from payments"
            " group by event_id, note order by event_id, note"
        ).fetchall()
    assert rows == [
        row for i in ids for row in [(i, "after", [None]), (i, "held", list(range(writes)))]
    ]
