"""The writer against a real PostgreSQL: new events, duplicates, concurrency, conn=, wake-ups."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from inbox import AsyncInboxWriter, DatabaseUnavailableError, InboxWriter, InvalidWriteError
from tests._ordering import ordering_of
from tests._wait import rows


def _count(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(f"select count(*) from {table}").fetchone()
        assert row is not None
        return int(row[0])


def _counts(url: str) -> dict[str, int]:
    return {t: _count(url, t) for t in ("inbox_events", "inbox_work", "inbox_deliveries")}


def test_new_event_is_stored_as_received_with_one_work_row(db_url: str) -> None:
    body = b'{"id": "evt_1",  "amount": 100}\n'
    with InboxWriter(db_url) as writer:
        result = writer.write(
            "stripe", "evt_1", body, {"stripe-signature": "t=1,v1=x"}, event_type="invoice.paid"
        )
    assert result.is_new
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "select id, source, idempotency_key, event_type, body, body_sha256, headers"
            " from inbox_events"
        ).fetchone()
        work = conn.execute("select event_id, state, attempts from inbox_work").fetchall()
    assert row == (
        result.event_id,
        "stripe",
        "evt_1",
        "invoice.paid",
        body,
        hashlib.sha256(body).digest(),
        {"stripe-signature": "t=1,v1=x"},
    )
    assert work == [(result.event_id, "pending", 0)]


def test_duplicate_creates_no_work_and_is_recorded_as_a_delivery(db_url: str) -> None:
    with InboxWriter(db_url) as writer:
        first = writer.write("github", "d-1", b"payload")
        second = writer.write("github", "d-1", b"payload")
    assert (first.is_new, second.is_new) == (True, False)
    assert second.event_id == first.event_id
    assert _counts(db_url) == {"inbox_events": 1, "inbox_work": 1, "inbox_deliveries": 1}
    with psycopg.connect(db_url) as conn:
        delivery = conn.execute("select event_id, body from inbox_deliveries").fetchone()
    assert delivery == (first.event_id, None)  # same body: only its hash is kept


def test_duplicate_with_a_different_body_keeps_the_first_and_records_the_other(
    db_url: str,
) -> None:
    with InboxWriter(db_url) as writer:
        first = writer.write("stripe", "evt_9", b'{"v": 1}')
        writer.write("stripe", "evt_9", b'{"v": 2}')
    with psycopg.connect(db_url) as conn:
        stored = conn.execute("select body from inbox_events").fetchone()
        delivery = conn.execute(
            "select event_id, body, body_sha256 from inbox_deliveries"
        ).fetchone()
    assert stored == (b'{"v": 1}',)
    assert delivery == (first.event_id, b'{"v": 2}', hashlib.sha256(b'{"v": 2}').digest())


def test_same_key_in_two_sources_is_two_events(db_url: str) -> None:
    with InboxWriter(db_url) as writer:
        a = writer.write("stripe", "k", b"1")
        b = writer.write("github", "k", b"1")
    assert a.is_new
    assert b.is_new
    assert a.event_id != b.event_id


def test_fifty_threads_writing_one_key_make_one_event(db_url: str) -> None:
    writers = 50
    barrier = threading.Barrier(writers)
    results: list[Any] = []
    errors: list[BaseException] = []

    with InboxWriter(db_url, min_size=writers, max_size=writers) as writer:

        def deliver(n: int) -> None:
            try:
                barrier.wait(timeout=30)
                results.append(writer.write("stripe", "evt_storm", f"body-{n % 2}".encode()))
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=deliver, args=(n,)) for n in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    assert errors == []
    assert sum(r.is_new for r in results) == 1
    assert len({r.event_id for r in results}) == 1
    assert _counts(db_url) == {"inbox_events": 1, "inbox_work": 1, "inbox_deliveries": 49}


def test_fifty_asyncio_tasks_writing_one_key_make_one_event(db_url: str) -> None:
    writers = 50

    async def storm() -> list[Any]:
        async with AsyncInboxWriter(db_url, min_size=writers, max_size=writers) as writer:
            start = asyncio.Event()

            async def deliver() -> Any:
                await start.wait()
                return await writer.write("stripe", "evt_async", b"same")

            tasks = [asyncio.create_task(deliver()) for _ in range(writers)]
            start.set()
            return await asyncio.gather(*tasks)

    results = asyncio.run(storm())
    assert sum(r.is_new for r in results) == 1
    assert len({r.event_id for r in results}) == 1
    assert _counts(db_url) == {"inbox_events": 1, "inbox_work": 1, "inbox_deliveries": 49}


def test_conn_joins_the_callers_transaction_and_rolls_back_with_it(db_url: str) -> None:
    with InboxWriter(db_url) as writer, psycopg.connect(db_url) as conn:
        conn.execute("create table orders (id int)")
        conn.commit()
        conn.execute("insert into orders values (1)")
        result = writer.write("shop", "order-1", b"{}", conn=conn)
        assert result.is_new
        conn.rollback()
    assert _counts(db_url) == {"inbox_events": 0, "inbox_work": 0, "inbox_deliveries": 0}
    assert _count(db_url, "orders") == 0


def test_conn_commit_keeps_the_event_and_wakes_listeners_only_then(db_url: str) -> None:
    with (
        psycopg.connect(db_url, autocommit=True) as listener,
        InboxWriter(db_url) as writer,
        psycopg.connect(db_url) as conn,
    ):
        listener.execute("listen inbox_work")
        writer.write("shop", "order-2", b"{}", conn=conn)
        assert list(listener.notifies(timeout=0.2)) == []  # not before the commit
        conn.commit()
        notes = list(listener.notifies(timeout=5, stop_after=1))
    assert [n.channel for n in notes] == ["inbox_work"]
    assert _counts(db_url)["inbox_events"] == 1


def test_a_standalone_write_wakes_listeners_after_commit(db_url: str) -> None:
    with (
        psycopg.connect(db_url, autocommit=True) as listener,
        InboxWriter(db_url) as writer,
    ):
        listener.execute("listen inbox_work")
        writer.write("stripe", "evt_wake", b"{}")
        notes = list(listener.notifies(timeout=5, stop_after=1))
    assert len(notes) == 1
    assert notes[0].payload == ""


def test_a_burst_is_announced_by_few_notifications_and_the_last_write_is_covered(
    db_url: str,
) -> None:
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute("listen inbox_work")
        with InboxWriter(db_url, notify_interval_seconds=10.0) as writer:
            for n in range(20):
                writer.write("stripe", f"evt_{n}", b"{}")
            first = list(listener.notifies(timeout=1, stop_after=2))
            assert len(first) == 1  # the leading one; the trailing one is 10 s away
        # Closing the writer sends the pending trailing notification instead of losing it.
        trailing = list(listener.notifies(timeout=5, stop_after=1))
    assert len(trailing) == 1


def test_in_transaction_mode_notifies_from_the_writing_statement(db_url: str) -> None:
    with (
        psycopg.connect(db_url, autocommit=True) as listener,
        InboxWriter(db_url, notify="in_transaction") as writer,
    ):
        listener.execute("listen inbox_work")
        writer.write("stripe", "a", b"{}")
        writer.write("stripe", "a", b"{}")  # a duplicate wakes nobody
        notes = list(listener.notifies(timeout=1, stop_after=2))
    assert len(notes) == 1


def test_async_writer_wakes_listeners_and_records_duplicates(db_url: str) -> None:
    async def run() -> tuple[Any, Any, list[Any]]:
        async with (
            await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener,
            AsyncInboxWriter(db_url) as writer,
        ):
            await listener.execute("listen inbox_work")
            first = await writer.write("slack", "Ev1", b"{}")
            second = await writer.write("slack", "Ev1", b"{}")
            notes = [n async for n in listener.notifies(timeout=5, stop_after=1)]
            return first, second, notes

    first, second, notes = asyncio.run(run())
    assert first.is_new
    assert not second.is_new
    assert first.event_id == second.event_id
    assert len(notes) == 1
    assert _counts(db_url) == {"inbox_events": 1, "inbox_work": 1, "inbox_deliveries": 1}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source": ""}, "source must not be empty"),
        ({"source": 7}, "source must be a str"),
        ({"key": ""}, "key must not be empty"),
        ({"key": "k" * 256}, "key is 256 characters; the limit is 255"),
        ({"key": "a\x00b"}, "key contains a NUL"),
        ({"body": "text"}, "body must be bytes"),
        ({"body": None}, "body must be bytes"),
        ({"headers": [("a", "b")]}, "headers must be a mapping"),
        ({"headers": {"a": 1}}, "headers must map str to str"),
        ({"event_type": ""}, "event_type must not be empty"),
        ({"received_at": datetime(2020, 1, 2)}, "received_at must be a timezone-aware"),
        ({"received_at": "2020-01-02"}, "received_at must be a timezone-aware"),
    ],
)
def test_bad_input_is_refused_before_any_sql(
    db_url: str, kwargs: dict[str, Any], message: str
) -> None:
    call: dict[str, Any] = {"source": "stripe", "key": "evt_1", "body": b"{}", "headers": {}}
    call.update(kwargs)
    with InboxWriter(db_url) as writer, pytest.raises(InvalidWriteError, match=message) as info:
        writer.write(**call)
    assert info.value.source == call["source"]
    assert info.value.key == call["key"]
    assert _counts(db_url)["inbox_events"] == 0


def test_async_bad_input_is_refused_too(db_url: str) -> None:
    async def run() -> None:
        async with AsyncInboxWriter(db_url) as writer:
            await writer.write("stripe", "", b"{}")

    with pytest.raises(InvalidWriteError, match="key must not be empty"):
        asyncio.run(run())


def test_unreachable_database_is_a_typed_error(unused_tcp_port: int) -> None:
    url = f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres?connect_timeout=1"
    with (
        InboxWriter(url, min_size=0, timeout_seconds=1) as writer,
        pytest.raises(DatabaseUnavailableError, match="evt_1"),
    ):
        writer.write("stripe", "evt_1", b"{}")


def test_async_unreachable_database_is_a_typed_error(unused_tcp_port: int) -> None:
    url = f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres?connect_timeout=1"

    async def run() -> None:
        async with AsyncInboxWriter(url, min_size=0, timeout_seconds=1) as writer:
            await writer.write("stripe", "evt_1", b"{}")

    with pytest.raises(DatabaseUnavailableError):
        asyncio.run(run())


def test_a_writer_takes_a_connection_string_or_a_pool_not_both(db_url: str) -> None:
    from psycopg_pool import ConnectionPool

    with pytest.raises(TypeError, match="needs a connection string or pool="):
        InboxWriter()
    pool = ConnectionPool(db_url, open=False)
    with pytest.raises(TypeError, match="not both"):
        InboxWriter(db_url, pool=pool)
    pool.open()
    try:
        with InboxWriter(pool=pool) as writer:  # a pool of the caller's: not autocommit
            assert writer.write("stripe", "evt_pool", b"{}").is_new
    finally:
        pool.close()
    assert _count(db_url, "inbox_events") == 1


@pytest.mark.parametrize("writer_class", [InboxWriter, AsyncInboxWriter])
def test_both_writers_check_their_arguments_before_making_a_pool(
    writer_class: type[InboxWriter] | type[AsyncInboxWriter],
) -> None:
    # One base checks the arguments of both twins; nothing here may connect (no database).
    name = writer_class.__name__
    with pytest.raises(TypeError, match=f"^{name} needs a connection string or pool=$"):
        writer_class()
    with pytest.raises(TypeError, match=f"^{name} takes a connection string or pool=, not both$"):
        writer_class("postgresql://nowhere.invalid/x", pool=object())  # type: ignore[arg-type]
    with pytest.raises(
        ValueError,
        match=rf"^{name}\(notify=\.\.\.\) must be one of 'after_commit', 'in_transaction', "
        r"'off', got 'later'$",
    ):
        writer_class("postgresql://nowhere.invalid/x", notify="later")  # type: ignore[arg-type]


def test_an_ordered_write_stores_its_key_timestamp_and_policy(db_url: str) -> None:
    from datetime import UTC, datetime

    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with InboxWriter(db_url) as writer:
        held = writer.write("s", "k1", b"{}", ordering_key="cus_1", order_at=at)
        go_on = writer.write("s", "k2", b"{}", ordering_key="cus_1", on_dead="continue")
        plain = writer.write("s", "k3", b"{}")
    held_row = ("cus_1", at, "hold", "s", "cus_1", at, "hold", False)
    assert ordering_of(db_url, held.event_id) == held_row
    row = ordering_of(db_url, go_on.event_id)
    assert row[0] == "cus_1"
    assert row[2] == "continue"
    assert row[1] is not None
    assert ordering_of(db_url, plain.event_id) == (None,) * 8


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"ordering_key": "k", "order_at": "2026-01-01"}, "order_at must be a timezone-aware"),
        ({"order_at": None, "on_dead": "hold"}, "on_dead applies to ordered events only"),
        ({"ordering_key": "k", "on_dead": "maybe"}, "on_dead must be 'hold' or 'continue'"),
        ({"ordering_key": ""}, "ordering_key must not be empty"),
    ],
)
def test_a_bad_ordering_is_refused_before_any_sql(
    db_url: str, kwargs: dict[str, Any], says: str
) -> None:
    with InboxWriter(db_url) as writer, pytest.raises(InvalidWriteError, match=says):
        writer.write("s", "k", b"{}", **kwargs)
    assert _count(db_url, "inbox_events") == 0


def test_group_committed_ordered_writes_keep_their_ordering(db_url: str) -> None:
    async def main() -> list[int]:
        async with AsyncInboxWriter(db_url) as writer:
            results = await asyncio.gather(
                *(writer.write("s", f"g{i}", b"{}", ordering_key=f"key{i % 3}") for i in range(30))
            )
        return [r.event_id for r in results]

    ids = asyncio.run(main())
    written = rows(
        db_url,
        "select e.idempotency_key, w.ordering_key, w.source, w.order_at = e.received_at"
        " from inbox_events e join inbox_work w on w.event_id = e.id where e.id = any(%s)",
        [ids],
    )
    assert sorted(written) == sorted((f"g{i}", f"key{i % 3}", "s", True) for i in range(30))


def test_an_import_keeps_its_original_receipt_time_and_dedupes_as_usual(db_url: str) -> None:
    """``received_at``: an event imported from another inbox keeps when it was first
    received, on the log, its key and its work row; a second import of it is a duplicate."""
    then = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    with InboxWriter(db_url) as writer:
        first = writer.write("stripe", "evt_old", b"{}", received_at=then)
        again = writer.write("stripe", "evt_old", b"{}", received_at=then)
        now = writer.write("stripe", "evt_new", b"{}")

    async def grouped() -> None:
        async with AsyncInboxWriter(db_url) as writer:
            results = await asyncio.gather(
                *(writer.write("shop", f"k{n}", b"{}", received_at=then) for n in range(20))
            )
            assert all(r.is_new for r in results)

    asyncio.run(grouped())
    assert (first.is_new, again.is_new, again.event_id) == (True, False, first.event_id)
    assert rows(
        db_url,
        "select e.received_at, k.received_at, w.received_at from inbox_events e"
        " join inbox_keys k on k.event_id = e.id join inbox_work w on w.event_id = e.id"
        " where e.id = %s",
        [first.event_id],
    ) == [(then, then, then)]
    assert rows(
        db_url,
        "select count(*) from inbox_events where source = 'shop' and received_at = %s",
        [then],
    ) == [(20,)]
    [(fresh,)] = rows(db_url, "select received_at from inbox_events where id = %s", [now.event_id])
    assert fresh > then


def test_an_import_into_a_period_without_a_partition_makes_it_once(db_url: str) -> None:
    """A write never fails for want of a partition: an import's period gets one (asked
    once per partition, not per event), and one a prune dropped under a writer that knew it
    is made again."""
    long_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(days=400)
    with InboxWriter(db_url) as writer:
        first = writer.write("shop", "imported-1", b"{}", received_at=long_ago)
        writer.write("shop", "imported-2", b"{}", received_at=long_ago + timedelta(minutes=1))
        [(partition, lo, hi)] = rows(
            db_url,
            "select e.tableoid::regclass::text, p.lo, p.hi from inbox_events e"
            " join inbox_partitions p on e.tableoid::regclass::text = 'inbox_events_' || p.suffix"
            " where e.id = %s",
            [first.event_id],
        )
        assert lo <= long_ago < hi
        assert rows(
            db_url,
            "select count(*) from inbox_events where tableoid::regclass::text = %s",
            [partition],
        ) == [(2,)]
        # Settled and pruned: the period's partition is gone, the writer still thinks not.
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("delete from inbox_work")
            conn.execute("select * from inbox_prune(300 * 86400, 'test', 'api')")
        assert rows(db_url, "select count(*) from pg_class where relname = %s", [partition]) == [
            (0,)
        ]
        again = writer.write("shop", "imported-3", b"{}", received_at=long_ago)
    assert again.is_new
    assert rows(db_url, "select received_at from inbox_events where id = %s", [again.event_id]) == [
        (long_ago,)
    ]
