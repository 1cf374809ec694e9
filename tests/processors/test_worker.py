"""The worker in this process against a real PostgreSQL: settle, retry, dead-letter, route."""

from __future__ import annotations

from collections import Counter
from typing import Any

import psycopg
import pytest

from processors import Event, Retry, Router
from tests._wait import row, rows, scalar
from tests.processors._support import (
    NO_RETRY_SOON,
    all_attempted,
    create_business_table,
    paying_router,
    run_until_first_attempt,
    run_until_settled,
    run_worker_until,
    settings,
    write_events,
)


def _all_processed(url: str, ids: list[int] | None = None) -> None:
    """Every attempt recorded (of the events ``ids``) succeeded."""
    query = "select array_agg(distinct outcome) from inbox_attempts"
    if ids is not None:
        query += " where event_id = any(%s)"
    assert scalar(url, query, None if ids is None else [ids]) == ["processed"]


def test_async_handler_writes_commit_with_the_settle(db_url: str, worker_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, 200)
    router = Router()

    @router.on("shop", "order.paid")
    async def paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(
            "insert into payments (event_id, amount) values (%s, %s)",
            [event.id, event.json()["n"]],
        )

    run_until_settled(db_url, router, worker_url=worker_url, what="an empty queue")
    assert scalar(db_url, "select count(*) from payments") == 200
    assert scalar(db_url, "select count(distinct event_id) from payments") == 200
    assert scalar(db_url, "select count(*) from inbox_work") == 0
    _all_processed(db_url, ids)
    assert scalar(db_url, "select count(*) from inbox_claims") == 0


def test_sync_handler_gets_a_sync_connection_in_the_same_transaction(
    db_url: str, worker_url: str
) -> None:
    create_business_table(db_url)
    write_events(db_url, 50)
    router = Router()
    seen: list[type] = []

    @router.on("shop", "*")
    def paid(event: Event, conn: psycopg.Connection[Any]) -> None:
        seen.append(type(conn))
        conn.execute("insert into payments (event_id) values (%s)", [event.id])

    run_until_settled(db_url, router, worker_url=worker_url)
    assert set(seen) == {psycopg.Connection}
    assert scalar(db_url, "select count(*) from payments") == 50


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_handler_that_writes_then_raises_leaves_no_business_row(
    db_url: str, worker_url: str, kind: str
) -> None:
    create_business_table(db_url)
    [event_id] = write_events(db_url, 1)
    router = Router()

    if kind == "async":

        @router.on("shop")
        async def broken(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.execute("insert into payments (event_id) values (%s)", [event.id])
            raise RuntimeError("card network said no")

    else:

        @router.on("shop")
        def broken_sync(event: Event, conn: psycopg.Connection[Any]) -> None:
            conn.execute("insert into payments (event_id) values (%s)", [event.id])
            raise RuntimeError("card network said no")

    run_until_first_attempt(worker_url, router)
    assert scalar(db_url, "select count(*) from payments") == 0
    attempt = row(db_url, "select outcome, error_class, error_message, attempt from inbox_attempts")
    work = row(
        db_url,
        "select state, attempts, run_at > now(), last_error from inbox_work where event_id = %s",
        [event_id],
    )
    assert attempt == ("failed", "RuntimeError", "card network said no", 1)
    assert work == ("pending", 1, True, "RuntimeError: card network said no")


def test_failures_back_off_then_dead_letter_after_max_attempts(
    db_url: str, worker_url: str
) -> None:
    [event_id] = write_events(db_url, 1)
    router = Router()

    @router.on("shop")
    async def always_fails(event: Event, conn: Any) -> None:
        raise ValueError(f"attempt {event.attempt} failed")

    run_worker_until(
        worker_url,
        router,
        lambda: scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 1,
        worker_settings=settings(max_attempts=4, backoff_base_seconds=0.05, backoff_max_seconds=1),
    )
    attempts = rows(
        db_url, "select attempt, outcome, error_message from inbox_attempts order by id"
    )
    work = row(
        db_url, "select state, attempts, last_error from inbox_work where event_id = %s", [event_id]
    )
    assert attempts == [
        (1, "failed", "attempt 1 failed"),
        (2, "failed", "attempt 2 failed"),
        (3, "failed", "attempt 3 failed"),
        (4, "dead", "attempt 4 failed"),
    ]
    assert work == ("dead", 4, "ValueError: attempt 4 failed")


def test_retry_after_reschedules_without_counting_a_failure(db_url: str, worker_url: str) -> None:
    [event_id] = write_events(db_url, 1)
    router = Router()
    calls: list[int] = []
    # The server's clock: the retry is due Retry.after past the first claim transaction's
    # now(), and the second run must see clock_timestamp() at or past that.
    clocks: list[Any] = []

    @router.on("shop")
    async def later(event: Event, conn: Any) -> None:
        calls.append(event.attempt)
        cursor = await conn.execute("select now(), clock_timestamp()")
        clocks.append(await cursor.fetchone())
        if len(calls) == 1:
            raise Retry(after=0.3, reason="rate limited")

    run_until_settled(db_url, router, worker_url=worker_url)
    attempts = rows(
        db_url, "select outcome, attempt, error_message from inbox_attempts order by id"
    )
    assert attempts == [("retry", 0, "rate limited"), ("processed", 1, None)]
    assert calls == [1, 1]  # a Retry is not a failed attempt
    (first_txn_start, _), (_, second_ran_at) = clocks
    gap = (second_ran_at - first_txn_start).total_seconds()
    assert gap >= 0.3, f"ran again {gap:.3f} s after the first claim, before Retry(after=0.3)"
    assert event_id


def test_unrouted_events_are_skipped_with_the_reason_recorded(db_url: str, worker_url: str) -> None:
    write_events(db_url, 1, source="stripe", event_type="charge.refunded")
    router = Router()

    @router.on("stripe", "invoice.*")
    async def invoices(event: Event, conn: Any) -> None:
        raise AssertionError("must not run")

    run_until_settled(db_url, router, worker_url=worker_url)
    skipped = row(db_url, "select outcome, error_message from inbox_attempts")
    assert skipped is not None
    assert skipped[0] == "skipped"
    assert "no handler routed for source 'stripe', type 'charge.refunded'" in skipped[1]


def test_unrouted_events_fail_when_configured_to(db_url: str, worker_url: str) -> None:
    write_events(db_url, 1)
    run_worker_until(
        worker_url,
        Router(),
        lambda: scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 1,
        worker_settings=settings(unrouted="fail", max_attempts=1),
    )
    assert scalar(db_url, "select error_class from inbox_attempts") == "NoRouteError"


def test_async_handler_deadline_is_a_failed_attempt(db_url: str, worker_url: str) -> None:
    write_events(db_url, 1)
    router = Router()

    @router.on("shop", timeout_seconds=0.2)
    async def hangs(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("select pg_sleep(30)")

    run_until_first_attempt(worker_url, router)
    row = scalar(db_url, "select error_class || ': ' || error_message from inbox_attempts")
    assert row.startswith("HandlerTimeoutError: handler ")
    assert "exceeded 0.2 s" in row


def test_sync_handler_deadline_cancels_its_query(db_url: str, worker_url: str) -> None:
    write_events(db_url, 1)
    router = Router()

    @router.on("shop", timeout_seconds=0.2)
    def hangs(event: Event, conn: psycopg.Connection[Any]) -> None:
        conn.execute("select pg_sleep(30)")

    run_worker_until(
        worker_url,
        router,
        lambda: scalar(db_url, "select count(*) from inbox_attempts") >= 1,
        worker_settings=settings(backoff_base_seconds=60, backoff_max_seconds=60),
        timeout=20,
    )
    assert scalar(db_url, "select error_class from inbox_attempts") == "HandlerTimeoutError"


def test_event_fields_reach_the_handler(db_url: str, worker_url: str) -> None:
    from inbox import InboxWriter

    # The claim reads the headers with its own JSON loader: escapes, quotes, non-ASCII text
    # and an empty value come back as written.
    headers = {"x-h": "v", "x-quote": 'a "b" \\ c\t', "x-name": "Zoë 東京 \u2028", "x-empty": ""}
    with InboxWriter(db_url) as writer:
        writer.write("stripe", "evt_7", b'{"a": 1}', headers, event_type="invoice.paid")
    router = Router()
    seen: list[Event] = []

    @router.on("stripe", "invoice.paid")
    async def capture(event: Event, conn: Any) -> None:
        seen.append(event)

    run_until_settled(db_url, router, worker_url=worker_url)
    [event] = seen
    assert (event.source, event.key, event.type, event.attempt) == (
        "stripe",
        "evt_7",
        "invoice.paid",
        1,
    )
    assert event.headers == headers
    assert event.body == b'{"a": 1}'
    assert event.json() == {"a": 1}
    assert event.is_replay is False


@pytest.mark.parametrize("pooler", ["none", "transaction"])
def test_worker_sessions_carry_server_side_guardrails(
    db_url: str, worker_url: str, pooler: Any
) -> None:
    # Behind a transaction pooler they are the claim transaction's own, not the session's.
    write_events(db_url, 1)
    router = Router()
    seen: dict[str, str] = {}

    @router.on("shop")
    async def look(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        for name in (
            "statement_timeout",
            "idle_in_transaction_session_timeout",
            "client_connection_check_interval",
        ):
            cursor = await conn.execute(f"show {name}")
            row = await cursor.fetchone()
            assert row is not None
            seen[name] = row[0]

    run_until_settled(
        db_url,
        router,
        worker_url=worker_url,
        worker_settings=settings(handler_timeout_seconds=7),
        pooler=pooler,
    )
    assert seen == {
        "statement_timeout": "8s",
        "idle_in_transaction_session_timeout": "17s",
        "client_connection_check_interval": "5s",
    }


def test_poll_only_mode_finds_new_work_without_listening(db_url: str, worker_url: str) -> None:
    import anyio

    from processors import Worker
    from tests._wait import await_for

    router = Router()
    handled: list[int] = []

    @router.on("shop")
    async def ok(event: Event, conn: Any) -> None:
        handled.append(event.id)

    worker = Worker(worker_url, router, settings(listen=False, poll_interval_seconds=0.1))

    def listeners() -> int:
        return int(
            scalar(
                db_url,
                "select count(*) from pg_stat_activity"
                " where application_name like 'pg-inbox listener%%'"
                " and datname = current_database()",
            )
        )

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            await await_for(
                lambda: (
                    scalar(
                        db_url,
                        "select count(*) from pg_stat_activity"
                        " where application_name like 'pg-inbox worker%%'"
                        " and datname = current_database()",
                    )
                    > 0
                ),
                within=30,
                what="the worker to connect",
            )
            # Written while the worker idles: only its poll can find it.
            await anyio.to_thread.run_sync(write_events, db_url, 1)
            await await_for(lambda: len(handled) == 1, within=30, what="the poll to find it")
            assert await anyio.to_thread.run_sync(listeners) == 0
            worker.request_stop()

    anyio.run(main)
    assert worker.metrics.registry.get_sample_value("inbox_listener_notifications_total") == 0


def test_sync_and_async_handlers_sharing_a_session_never_clash_over_prepared_statements(
    db_url: str,
    worker_url: str,
) -> None:
    # Both handler kinds run on one server session; psycopg prepares a statement after a few
    # executions and names it per connection object, so two objects preparing on one session
    # would collide ("prepared statement _pg3_0 already exists").
    create_business_table(db_url)
    write_events(db_url, 40, event_type="order.paid")
    write_events(db_url, 40, source="till", event_type="order.paid")
    router = Router()
    insert = "insert into payments (event_id, note) values (%s, %s)"

    @router.on("shop")
    async def paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(insert, [event.id, "async"])

    @router.on("till")
    def paid_at_till(event: Event, conn: psycopg.Connection[Any]) -> None:
        conn.execute(insert, [event.id, "sync"])

    run_worker_until(
        worker_url,
        router,
        lambda: scalar(db_url, "select count(*) from inbox_attempts") >= 80,
        worker_settings=settings(batch_size=64),
    )
    _all_processed(db_url)
    assert scalar(db_url, "select count(*) from payments") == 80


def test_an_error_message_postgresql_cannot_store_is_escaped_not_fatal(
    db_url: str, worker_url: str
) -> None:
    # A NUL, or a lone surrogate from a file name that was not UTF-8: stored as is, either
    # would fail the settle, roll the batch back and charge every event with a crash.
    create_business_table(db_url)
    ids = write_events(db_url, 3)
    router = paying_router(Counter(), 1, OSError("cannot open b'\x00' at /data/caf\udce9.csv"))

    run_worker_until(
        worker_url, router, all_attempted(db_url, 3), worker_settings=settings(**NO_RETRY_SOON)
    )
    message = scalar(
        db_url, "select error_message from inbox_attempts where event_id = %s", [ids[1]]
    )
    assert message == "cannot open b'\\x00' at /data/caf\\udce9.csv"
    assert scalar(db_url, "select count(*) from payments") == 2
    assert scalar(db_url, "select count(*) from inbox_claims") == 0


def test_a_resumed_claim_that_finds_nothing_looks_from_the_start_before_idling(
    db_url: str, worker_url: str
) -> None:
    import anyio

    from processors import Worker
    from tests._wait import await_for

    first, second = write_events(db_url, 2)
    router = Router()
    handled: list[int] = []

    async def main() -> None:
        # The first event is locked while the worker's first claim runs, so that claim
        # takes the second, a full batch of one, and the next claim resumes after it: the
        # first event, given back by then, is behind that position.
        locker = await psycopg.AsyncConnection.connect(db_url)
        await locker.execute("select from inbox_work where event_id = %s for update", [first])

        @router.on("shop")
        async def ok(event: Event, conn: Any) -> None:
            handled.append(event.id)
            if event.id == second:
                await locker.commit()

        # No wake-ups and a poll that outlasts the test: only a look from the start finds
        # the first event.
        worker = Worker(
            worker_url, router, settings(listen=False, poll_interval_seconds=600, batch_size=1)
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            await await_for(lambda: len(handled) == 2, within=30, what="the event given back")
            worker.request_stop()
        await locker.close()

    anyio.run(main)
    assert handled == [second, first]
    _all_processed(db_url)


def test_a_host_gone_silent_before_the_primary_holds_each_connection_only_briefly(
    db_url: str, worker_url: str
) -> None:
    import socket

    import anyio
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from processors import Worker
    from tests._wait import await_for

    # A host that takes the connection and never answers (a machine gone, its address
    # still routed): libpq waits for its greeting until connect_timeout, then tries the next.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    params = conninfo_to_dict(worker_url)
    hosts = f"127.0.0.1,{params.get('host') or '127.0.0.1'}"
    ports = f"{silent.getsockname()[1]},{params.get('port') or 5432}"
    url = make_conninfo(worker_url, host=hosts, port=ports)
    router = Router()
    handled: list[int] = []

    @router.on("shop")
    async def ok(event: Event, conn: Any) -> None:
        handled.append(event.id)

    write_events(db_url, 1)
    worker = Worker(url, router, settings(), connect_timeout_seconds=1)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            await await_for(lambda: len(handled) == 1, within=20, what="the event handled")
            worker.request_stop()

    try:
        anyio.run(main)
    finally:
        silent.close()
