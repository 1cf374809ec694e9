"""Group commit in AsyncInboxWriter: concurrent writes share statements, and each still gets
its own, exact result."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from structlog.testing import capture_logs

from inbox import AsyncInboxWriter, DatabaseUnavailableError, WriteResult
from tests._proxy import CommitCutter, PostgresProxy
from tests._wait import await_for, scalar, wait_for


def _one(url: str, query: str) -> object:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return row[0]


def _write_all(url: str, writes: list[tuple[str, str, bytes]], pool: int) -> list[WriteResult]:
    async def run() -> list[WriteResult]:
        async with AsyncInboxWriter(url, min_size=pool, max_size=pool) as writer:
            start = asyncio.Event()

            async def deliver(source: str, key: str, body: bytes) -> WriteResult:
                await start.wait()
                return await writer.write(source, key, body, event_type="order.paid")

            tasks = [asyncio.create_task(deliver(*w)) for w in writes]
            start.set()
            return await asyncio.gather(*tasks)

    return asyncio.run(run())


def test_concurrent_new_writes_share_commits_and_each_gets_its_own_event(db_url: str) -> None:
    writes = [("shop", f"key-{n}", f'{{"n": {n}}}'.encode()) for n in range(300)]
    results = _write_all(db_url, writes, pool=8)

    assert all(r.is_new for r in results)
    assert len({r.event_id for r in results}) == 300
    with psycopg.connect(db_url) as conn:
        stored = dict(
            conn.execute("select idempotency_key, id from inbox_events").fetchall()  # type: ignore[arg-type]
        )
    assert stored == {key: r.event_id for (_, key, _), r in zip(writes, results, strict=True)}
    assert _one(db_url, "select count(*) from inbox_work") == 300
    # Rows written by one transaction share its xmin: fewer transactions than writes.
    transactions = _one(db_url, "select count(distinct xmin::text) from inbox_events")
    assert isinstance(transactions, int)
    assert transactions < 300


def test_duplicates_in_a_group_and_of_older_events_are_recorded_as_deliveries(
    db_url: str,
) -> None:
    [earlier] = _write_all(db_url, [("shop", "old", b"first")], pool=2)
    writes = [
        ("shop", "old", b"first"),  # a duplicate of a committed event
        *[("shop", "twice", b"same")] * 5,  # one key five times in the queue
        ("shop", "fresh", b"new"),
        ("till", "twice", b"other source"),  # same key, other source: its own event
    ]
    results = _write_all(db_url, writes, pool=4)

    assert results[0] == WriteResult(event_id=earlier.event_id, is_new=False)
    twice = results[1:6]
    assert sum(r.is_new for r in twice) == 1
    assert len({r.event_id for r in twice}) == 1
    assert results[6].is_new
    assert results[7].is_new
    assert len({twice[0].event_id, results[6].event_id, results[7].event_id}) == 3
    assert _one(db_url, "select count(*) from inbox_events") == 4
    assert _one(db_url, "select count(*) from inbox_work") == 4
    assert _one(db_url, "select count(*) from inbox_deliveries") == 1 + 4


def test_every_queued_write_meets_the_outage(unused_tcp_port: int) -> None:
    url = f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres?connect_timeout=1"

    async def run() -> list[BaseException | WriteResult]:
        async with AsyncInboxWriter(url, min_size=0, max_size=4, timeout_seconds=1) as writer:
            return await asyncio.gather(
                *(writer.write("shop", f"key-{n}", b"{}") for n in range(10)),
                return_exceptions=True,
            )

    outcomes = asyncio.run(run())
    assert len(outcomes) == 10
    for n, outcome in enumerate(outcomes):
        assert isinstance(outcome, DatabaseUnavailableError), outcome
        assert f"key-{n}" in str(outcome)


@pytest.mark.parametrize("pool", [1, 2])
def test_a_small_pool_still_groups_and_finishes(db_url: str, pool: int) -> None:
    writes = [("shop", f"k{n % 40}", b"x") for n in range(120)]  # every key three times
    results = _write_all(db_url, writes, pool=pool)
    assert sum(r.is_new for r in results) == 40
    assert _one(db_url, "select count(*) from inbox_events") == 40
    assert _one(db_url, "select count(*) from inbox_deliveries") == 80


def test_groups_sharing_keys_in_opposite_orders_do_not_deadlock(db_url: str) -> None:
    # Two writers (two queues) send the same keys as one group each, in opposite arrival
    # orders: a storm of duplicates reaching two receiver processes. A third session holds
    # the middle key uncommitted, so both groups are mid-statement, holding what they have
    # inserted, when it lets go. Rows inserted in arrival order would then deadlock.
    keys = [f"k{n:02d}" for n in range(30)]
    lock_waits = (
        "select count(*) from pg_stat_activity where datname = current_database()"
        " and wait_event_type = 'Lock' and application_name = 'pg-inbox writer'"
    )

    async def run() -> list[list[WriteResult]]:
        blocker = await psycopg.AsyncConnection.connect(db_url)
        await blocker.execute(
            "insert into inbox_keys (source, idempotency_key, body_sha256)"
            " values ('shop', 'k15', sha256(''))"
        )
        # A pool of 2 carries one group at a time: the first write goes alone, the other
        # 29 queue behind it and form one group.
        async with (
            AsyncInboxWriter(db_url, min_size=2, max_size=2) as forward,
            AsyncInboxWriter(db_url, min_size=2, max_size=2) as backward,
        ):
            tasks = [
                [asyncio.create_task(forward.write("shop", k, b"x")) for k in keys],
                [asyncio.create_task(backward.write("shop", k, b"x")) for k in reversed(keys)],
            ]
            await await_for(
                lambda: scalar(db_url, lock_waits) == 2, within=20, what="both groups waiting"
            )
            await blocker.rollback()
            await blocker.close()
            return [await asyncio.gather(*t) for t in tasks]

    forward, backward = asyncio.run(run())
    assert sum(r.is_new for r in forward + backward) == 30
    assert {r.event_id for r in forward} == {r.event_id for r in backward}
    assert _one(db_url, "select count(*) from inbox_events") == 30
    # A backend flushes its statistics when it exits: wait for the writers' to go.
    writers_gone = (
        "select count(*) = 0 from pg_stat_activity where datname = current_database()"
        " and application_name = 'pg-inbox writer'"
    )
    wait_for(lambda: scalar(db_url, writers_gone), timeout=20, what="the writers' sessions")
    deadlocks = scalar(
        db_url, "select deadlocks from pg_stat_database where datname = current_database()"
    )
    assert deadlocks == 0


def test_a_key_held_by_another_transaction_does_not_hold_up_its_group(db_url: str) -> None:
    # A write joined to a long application transaction holds its key uncommitted; a retry
    # of that delivery lands in a group with unrelated writes. The group gives up on the
    # lock after a short wait and its writes go singly: only the held key waits.
    keys = [f"k{n}" for n in range(10)]

    async def run() -> tuple[list[WriteResult], WriteResult]:
        blocker = await psycopg.AsyncConnection.connect(db_url)
        async with AsyncInboxWriter(db_url, min_size=2, max_size=2) as writer:
            await writer.write("shop", "k5", b"x", conn=blocker)  # uncommitted
            # A pool of 2: the first write goes alone, the other nine form one group.
            tasks = {k: asyncio.create_task(writer.write("shop", k, b"x")) for k in keys}
            held = tasks.pop("k5")
            others = await asyncio.wait_for(asyncio.gather(*tasks.values()), timeout=10)
            assert not held.done()
            await blocker.commit()
            await blocker.close()
            return others, await asyncio.wait_for(held, timeout=10)

    others, held = asyncio.run(run())
    assert all(r.is_new for r in others)
    assert held.is_new is False  # the blocker's write committed first
    assert _one(db_url, "select count(*) from inbox_events") == 10
    assert _one(db_url, "select count(*) from inbox_deliveries") == 1


def test_with_one_group_in_flight_a_later_write_waits_for_the_held_group(db_url: str) -> None:
    # A group held up by another transaction's key fills its slot until its short lock wait
    # gives up and its writes fall back to going singly. With one slot (the receiver app's
    # choice), a write made meanwhile goes only after that, even though the pool has free
    # connections (with the default two slots it would go beside the held group).
    async def run() -> tuple[bool, list[WriteResult]]:
        blocker = await psycopg.AsyncConnection.connect(db_url)
        async with AsyncInboxWriter(db_url, min_size=4, max_size=4, groups_in_flight=1) as writer:
            await writer.write("shop", "held", b"x", conn=blocker)  # uncommitted
            with capture_logs() as logs:

                def group_waits_or_fell_back() -> bool:
                    if any(e["event"] == "write_group_fell_back" for e in logs):
                        return True
                    waiting = _one(
                        db_url,
                        "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
                        " and datname = current_database()",
                    )
                    return waiting == 1

                # Made in one pass of the event loop, the two writes form one group.
                group = [asyncio.create_task(writer.write("shop", k, b"x")) for k in ("held", "a")]
                await await_for(group_waits_or_fell_back, within=10, what="the group to wait")
                later = await asyncio.wait_for(writer.write("shop", "b", b"x"), timeout=10)
                fell_back_first = any(e["event"] == "write_group_fell_back" for e in logs)
            await blocker.commit()
            await blocker.close()
            return fell_back_first, [later, *await asyncio.gather(*group)]

    fell_back_first, (later, held, other) = asyncio.run(run())
    assert fell_back_first
    assert later.is_new
    assert other.is_new
    assert held.is_new is False  # the blocker's write committed first
    assert _one(db_url, "select count(*) from inbox_events") == 3


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_groups_in_flight_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match=r"^AsyncInboxWriter\(groups_in_flight="):
        AsyncInboxWriter("postgresql://nowhere.invalid/x", groups_in_flight=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("commit_reaches_server", [True, False], ids=["committed", "lost"])
def test_a_group_whose_commit_outcome_is_unknown_fails_every_write(
    db_url: str, commit_reaches_server: bool
) -> None:
    # The connection breaks as the group's statement (which commits by itself) is sent: the
    # server commits it (or never sees it), the writer never hears. Every caller gets the
    # error, as a single write's caller would, and never a "duplicate" answer for an event
    # it created.
    cutter = CommitCutter(
        after=b"inbox_write_events(", forward_commit=commit_reaches_server, cut_at_after=True
    )
    proxy = PostgresProxy(db_url, cutter)

    async def run() -> list[BaseException | WriteResult]:
        async with AsyncInboxWriter(
            proxy.conninfo(), min_size=2, max_size=2, timeout_seconds=5
        ) as writer:
            # Made in one pass of the event loop, the writes form one group.
            group = [writer.write("shop", f"k{n}", b"x") for n in range(8)]
            return await asyncio.gather(*group, return_exceptions=True)

    try:
        outcomes = asyncio.run(run())
    finally:
        proxy.close()
    assert cutter.cut.is_set()
    for outcome in outcomes:
        assert isinstance(outcome, DatabaseUnavailableError), outcome
    # The server may still be running the statement the writer gave up on: wait until every
    # other session on this database is idle (its backend has committed or aborted).
    wait_for(
        lambda: (
            _one(
                db_url,
                "select count(*) from pg_stat_activity"
                " where datname = current_database() and pid <> pg_backend_pid()"
                " and state <> 'idle'",
            )
            == 0
        ),
        timeout=30,
        what="the cut connection's backend to finish",
    )
    # All or nothing, as the server decided; a provider's retry learns which.
    stored = _one(db_url, "select count(*) from inbox_events where idempotency_key like 'k%'")
    assert stored == (8 if commit_reaches_server else 0)
    assert _one(db_url, "select count(*) from inbox_deliveries") == 0
