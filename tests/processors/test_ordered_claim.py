"""The ordered claim, statement by statement, with several connections standing for several
workers: a key's head only, never its second event while the head is held, retried,
suspect or dead (with on_dead = "hold"); other keys and unordered work go on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import tuple_row

from inbox import InboxWriter
from processors._claiming.cursor import CLAIM_WINDOW_BATCHES, claim_params
from processors._claiming.store import CLAIM_BATCH, CLAIM_SUSPECT, COUNT_CLAIMS
from processors.testing import COUNT_DUE
from tests._log import seed_events

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def write(
    url: str, events: list[tuple[str | None, int]], *, on_dead: str | None = None, start: int = 0
) -> list[int]:
    """(ordering key or None, order position) per event; returns the event ids."""
    with InboxWriter(url, notify="off") as writer:
        return [
            writer.write(
                "ordered",
                f"evt-{start + i}",
                b"{}",
                ordering_key=key,
                order_at=None if key is None else T0 + timedelta(seconds=at),
                on_dead=None if key is None else on_dead,
            ).event_id
            for i, (key, at) in enumerate(events)
        ]


@pytest.fixture
def conns(db_url: str) -> Iterator[list[psycopg.Connection[Any]]]:
    opened = [psycopg.connect(db_url, row_factory=tuple_row) for _ in range(3)]
    yield opened
    for conn in opened:
        conn.close()


def claim(conn: psycopg.Connection[Any], size: int = 64) -> list[int]:
    """Claim in ``conn``'s open transaction (its locks stay until commit or rollback)."""
    rows = conn.execute(CLAIM_BATCH, claim_params(size)).fetchall()
    return [int(r[0]) for r in rows if r[1] is not None]  # not the window's end (no event)


def claims(url: str, batch: list[tuple[int, str | None]], worker: str = "w") -> set[int]:
    """count_claims on an autocommit connection: the events whose key is busy."""
    with psycopg.connect(url, autocommit=True) as side:
        rows = side.execute(
            COUNT_CLAIMS,
            {
                "event_ids": [e for e, _ in batch],
                "sources": ["ordered"] * len(batch),
                "ordering_keys": [k for _, k in batch],
                "worker": worker,
            },
        ).fetchall()
    return {int(r[0]) for r in rows}


def sql(url: str, query: str, params: Any = None) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(query, params)


def test_one_claim_takes_the_head_of_every_key_and_the_unordered_work(
    db_url: str, conns: list[psycopg.Connection[Any]]
) -> None:
    # Written out of order: b's head is its last write, a's the second.
    ids = write(db_url, [("a", 2), ("a", 1), ("b", 9), ("b", 5), (None, 0), ("a", 3)])
    assert sorted(claim(conns[0])) == sorted([ids[1], ids[3], ids[4]])


def test_a_head_another_worker_holds_blocks_its_key_and_no_other(
    db_url: str, conns: list[psycopg.Connection[Any]]
) -> None:
    ids = write(db_url, [("a", 1), ("a", 2), ("b", 1), ("b", 2)])
    assert claim(conns[0], size=1) == [ids[0]]  # a's head, held in an open transaction
    # The second worker must not skip to a's second event: b's head only.
    assert claim(conns[1]) == [ids[2]]
    # The first commits a's head as done: a's second event is the head now.
    conns[0].execute("delete from inbox_work where event_id = %s", [ids[0]])
    conns[0].commit()
    conns[1].rollback()
    assert sorted(claim(conns[1])) == [ids[1], ids[2]]


def test_a_head_waiting_for_its_retry_blocks_its_key(
    db_url: str, conns: list[psycopg.Connection[Any]]
) -> None:
    ids = write(db_url, [("a", 1), ("a", 2), ("b", 1)])
    sql(
        db_url,
        "update inbox_work set run_at = now() + interval '1 hour', attempts = 1"
        " where event_id = %s",
        [ids[0]],
    )
    assert claim(conns[0]) == [ids[2]]
    # And it does not count as work due now (what run_pending waits for).
    assert conns[1].execute(COUNT_DUE).fetchone() == (1,)


@pytest.mark.parametrize(("on_dead", "follower_runs"), [("hold", False), ("continue", True)])
def test_a_dead_head_holds_its_key_or_lets_it_go_on(
    db_url: str, conns: list[psycopg.Connection[Any]], on_dead: str, follower_runs: bool
) -> None:
    ids = write(db_url, [("a", 1), ("a", 2)], on_dead=on_dead)
    sql(db_url, "update inbox_work set state = 'dead' where event_id = %s", [ids[0]])
    assert claim(conns[0]) == ([ids[1]] if follower_runs else [])


def test_a_suspect_blocks_its_key_and_runs_alone(
    db_url: str, conns: list[psycopg.Connection[Any]]
) -> None:
    ids = write(db_url, [("a", 1), ("a", 2), ("b", 1)])
    # A worker claimed a's head and died: its counter (and the key's slot) survives.
    assert claims(db_url, [(ids[0], "a")]) == set()
    assert claim(conns[0]) == [ids[2]]
    conns[0].rollback()
    suspect = conns[1].execute(CLAIM_SUSPECT, {"version": None}).fetchall()
    assert [r[0] for r in suspect] == [ids[0]]
    assert suspect[0][3] == 1  # its crashes so far
    # Claimed again, the suspect keeps its counter (and the slot): no event is busy.
    assert claims(db_url, [(ids[0], "a")]) == set()


def test_the_key_slot_releases_an_event_whose_key_is_in_flight(db_url: str) -> None:
    """What a snapshot cannot see: a row committed later that sorts before the one in
    flight. The claim counters' unique key slot catches it."""
    ids = write(db_url, [("a", 5), ("b", 1)])
    assert claims(db_url, [(ids[0], "a")]) == set()  # a's head is in flight
    [late] = write(db_url, [("a", 1)], start=2)
    assert claims(db_url, [(late, "a"), (ids[1], "b")]) == {late}


def test_replays_run_after_the_keys_live_events_and_in_key_order(
    db_url: str, conns: list[psycopg.Connection[Any]]
) -> None:
    ids = write(db_url, [("a", 1), ("a", 2), ("a", 3)])
    # The first two were processed; a replay queues them at priority 1 while the third
    # (live) still waits: the live one goes first, then the replayed ones in key order.
    sql(db_url, "delete from inbox_work where event_id = any(%s)", [ids[:2]])
    sql(
        db_url,
        "insert into inbox_work"
        " (event_id, received_at, priority, source, ordering_key, order_at, on_dead)"
        " select id, received_at, 1, source, ordering_key, order_at, on_dead from inbox_events"
        " where id = any(%s)",
        [ids[:2]],
    )
    order = []
    for _ in range(3):
        [head] = claim(conns[0])
        order.append(head)
        conns[0].execute("delete from inbox_work where event_id = %s", [head])
        conns[0].commit()
    assert order == [ids[2], ids[0], ids[1]]


def _load_ordered(url: str, keys: int, per_key: int) -> None:
    """``keys`` x ``per_key`` ordered events, interleaved in arrival, in one statement."""
    with psycopg.connect(url) as conn:
        seed_events(
            conn,
            "select 'ordered' as source, 'k' || g as idempotency_key,"
            " 'key' || (g %% %(keys)s) as ordering_key,"
            " now() + make_interval(secs => g) as order_at, 'hold' as on_dead"
            " from generate_series(1, %(n)s) g",
            {"keys": keys, "n": keys * per_key},
        )
        conn.execute(
            "insert into inbox_work"
            " (event_id, received_at, run_at, source, ordering_key, order_at, on_dead)"
            " select id, received_at, order_at - interval '1 day', source, ordering_key,"
            " order_at, on_dead from inbox_events"
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")


def _explain(url: str, size: int) -> tuple[dict[str, Any], list[Any]]:
    import json

    with psycopg.connect(url) as conn:
        rows = [r for r in conn.execute(CLAIM_BATCH, claim_params(size)) if r[1] is not None]
        conn.rollback()
        [plan] = conn.execute(
            "explain (analyze, buffers, format json) " + CLAIM_BATCH, claim_params(size)
        ).fetchone() or [None]
        conn.rollback()
    parsed = plan if isinstance(plan, list) else json.loads(plan)
    return parsed[0], rows


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found.extend(_nodes(child))
    return found


@pytest.mark.parametrize(("keys", "per_key"), [(1000, 10), (10, 500)])
def test_the_ordered_claim_is_index_driven_and_takes_one_head_per_key(
    db_url: str, keys: int, per_key: int
) -> None:
    _load_ordered(db_url, keys, per_key)
    plan, rows = _explain(db_url, 64)
    # One event per key, each the first of its key (the lowest position).
    assert len(rows) == min(64, keys)
    assert len({r[10] for r in rows}) == len(rows)
    assert all(int(r[0]) <= keys for r in rows)
    scans = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "inbox_work"]
    # The walk in claim order (with an early stop), and the head probes: no table scan.
    assert {n["Node Type"] for n in scans} <= {"Index Scan", "Index Only Scan"}
    assert {n["Index Name"] for n in scans} == {"inbox_work_claim", "inbox_work_key"}
    # The walk is the Index Scan; the Index Only Scan finds the window's end.
    [walk] = [
        n for n in scans if (n["Index Name"], n["Node Type"]) == ("inbox_work_claim", "Index Scan")
    ]
    if keys >= 64:
        # Heads are plentiful: the walk stops after a few rows per head found.
        assert walk["Actual Rows"] <= 4 * 64
    else:
        # Too few heads for a batch: the walk stops at the window's end, not the queue's.
        assert walk["Actual Rows"] + walk["Rows Removed by Filter"] <= CLAIM_WINDOW_BATCHES * 64
        assert keys * per_key > CLAIM_WINDOW_BATCHES * 64
    # Each head test is one probe of inbox_work_key: a few blocks, not the key's backlog.
    probes = [n for n in scans if n.get("Index Name") == "inbox_work_key"]
    for probe in probes:
        per_loop = (probe["Shared Hit Blocks"] + probe["Shared Read Blocks"]) / probe[
            "Actual Loops"
        ]
        assert per_loop <= 4, probe


def test_claims_sweep_a_busy_keys_backlog_window_by_window_to_a_head_behind_it(
    db_url: str, conns: list[psycopg.Connection[Any]]
) -> None:
    import math

    import anyio

    from processors._claiming.cursor import ClaimCursor
    from processors._claiming.store import WorkStore

    size = 4
    window = CLAIM_WINDOW_BATCHES * size
    hot = 100
    ids = write(db_url, [("hot", i) for i in range(hot)] + [("cold", 0)])
    assert claim(conns[0], size=1) == [ids[0]]  # hot's head, in flight: held and counted
    assert claims(db_url, [(ids[0], "hot")]) == set()

    async def sweep() -> tuple[list[int], int]:
        cursor, store = ClaimCursor(), WorkStore()
        async with await psycopg.AsyncConnection.connect(db_url) as conn:
            for scans in range(1, 100):
                # As the worker's loop does; within the first second only the windows move
                # the cursor.
                after = cursor.start(0.0)
                claim = await store.claim_batch(
                    conn, size, look_for_suspect=False, after=after, windowed=cursor.windowed
                )
                await conn.rollback()
                cursor.claimed(claim, size)
                if claim.batch:
                    return [item.claimed.event_id for item in claim.batch], scans
        raise AssertionError("the sweep never reached the head behind the busy key")

    found, scans = anyio.run(sweep)
    # No claim walked the whole backlog: each looked at one window. The start (the first
    # window) and the sweep through the next ones took turns until the sweep found it:
    # start, window 2, start, window 3, ... start, the last window.
    assert found == [ids[hot]]
    windows = math.ceil((hot + 1) / window)
    assert windows > 2
    assert scans == 2 * (windows - 1)
