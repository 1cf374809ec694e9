"""The claim stays index-driven, and its cost does not grow with the history."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from processors._claiming.cursor import CLAIM_WINDOW_BATCHES, START, Position, claim_params
from processors._claiming.store import CLAIM_BATCH
from tests._log import seed_events

PENDING = 500


def _load(url: str, history: int) -> None:
    """``history`` settled events with an attempt each, then PENDING events still to do."""
    with psycopg.connect(url) as conn:
        seed_events(
            conn,
            "select 'shop' as source, 'k' || g as idempotency_key, '{}' as body"
            " from generate_series(1, %s) g",
            [history + PENDING],
        )
        conn.execute(
            "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
            " select id, received_at, 1, now(), 'processed' from inbox_events where id <= %s",
            [history],
        )
        conn.execute(
            "insert into inbox_work (event_id, received_at)"
            " select id, received_at from inbox_events where id > %s",
            [history],
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")


def _explain(
    url: str, after: Position = START, batch_size: int = 100, *, windowed: bool = True
) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "explain (analyze, buffers, format json) " + CLAIM_BATCH,
            claim_params(batch_size, after, windowed=windowed),
        ).fetchone()
        conn.rollback()  # EXPLAIN ANALYZE took the row locks; give them back
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return plan[0]  # type: ignore[no-any-return]


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found.extend(_nodes(child))
    return found


def _blocks(node: dict[str, Any]) -> int:
    return int(node["Shared Hit Blocks"]) + int(node["Shared Read Blocks"])


def _work_scans(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in _nodes(node) if n.get("Relation Name") == "inbox_work"]


def _claim_node(plan: dict[str, Any]) -> dict[str, Any]:
    """The locking scan of inbox_work: the claim proper, before the log is joined."""
    [locking] = [n for n in _nodes(plan["Plan"]) if n["Node Type"] == "LockRows"]
    return locking


def test_the_claim_walks_the_partial_index(db_url: str, worker_url: str) -> None:
    _load(db_url, history=1000)
    plan = _explain(worker_url)
    work_scans = _work_scans(_claim_node(plan))
    assert work_scans[0]["Node Type"] == "Index Scan"
    assert work_scans[0]["Index Name"] == "inbox_work_claim"
    # The only other scan is the head probe of ordered events, which no row here needs.
    assert [(n["Index Name"], n["Actual Loops"]) for n in work_scans[1:]] == [("inbox_work_key", 0)]
    assert _claim_node(plan)["Actual Rows"] == 100
    # The window's end is found in the same index, reading the window's entries alone.
    [window] = [n for n in _work_scans(plan["Plan"]) if n not in work_scans]
    assert (window["Node Type"], window["Index Name"]) == ("Index Only Scan", "inbox_work_claim")
    assert window["Actual Rows"] <= CLAIM_WINDOW_BATCHES * 100
    # A claim without a window (after a batch of unordered work) does not look for its end.
    unwindowed = _explain(worker_url, windowed=False)
    assert _claim_node(unwindowed)["Actual Rows"] == 100
    [skipped] = [n for n in _work_scans(unwindowed["Plan"]) if n["Node Type"] == "Index Only Scan"]
    assert skipped["Actual Loops"] == 0


def test_the_claim_costs_the_same_with_a_hundred_times_more_history(
    db_url: str, empty_db_url: str
) -> None:
    from inbox._core.database import migrate as _migrate

    _migrate.upgrade(empty_db_url)
    _load(db_url, history=1_000)
    _load(empty_db_url, history=100_000)
    small_plan, large_plan = _explain(db_url), _explain(empty_db_url)
    # The work table holds only what is pending: the claim reads the same blocks whatever
    # the history's size.
    small, large = _blocks(_claim_node(small_plan)), _blocks(_claim_node(large_plan))
    assert large <= small * 1.2 + 10, f"the claim read {small} blocks, then {large}"
    # The claimed events are then fetched from the log by primary key, in the partition
    # their receipt time names: a few blocks each (the depth of the index), however long
    # the log is.
    fetches = [
        n
        for n in _nodes(large_plan["Plan"])
        if n.get("Relation Name", "").startswith("inbox_events_") and n.get("Actual Loops")
    ]
    assert fetches
    assert {n["Index Name"].removeprefix(n["Relation Name"]) for n in fetches} == {"_pkey"}
    assert sum(_blocks(n) for n in fetches) <= 4 * 100


def test_the_next_due_lookup_probes_the_claim_index(db_url: str, worker_url: str) -> None:
    from processors._claiming.store import NEXT_DUE

    _load(db_url, history=1000)
    with psycopg.connect(db_url) as conn:
        # Live work and a replay run, some due later: both priorities are looked at.
        conn.execute(
            "update inbox_work set run_at = now() + interval '1 hour' * (event_id % 3),"
            " priority = event_id % 2"
        )
        conn.commit()
        conn.execute("analyze inbox_work")
    with psycopg.connect(worker_url) as conn:
        due_in = conn.execute(NEXT_DUE).fetchone()
        row = conn.execute("explain (analyze, buffers, format json) " + NEXT_DUE).fetchone()
    assert due_in is not None
    assert 3500 < due_in[0] <= 3600
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    work_scans = [n for n in _nodes(plan[0]["Plan"]) if n.get("Relation Name") == "inbox_work"]
    assert work_scans
    assert {n["Node Type"] for n in work_scans} <= {"Index Scan", "Index Only Scan"}
    assert {n["Index Name"] for n in work_scans} == {"inbox_work_claim"}
    # A handful of index probes, not a walk over the pending rows.
    assert _blocks(plan[0]["Plan"]) <= 30


def test_a_resumed_claim_does_not_walk_the_dead_entries_of_settled_rows(db_url: str) -> None:
    _load(db_url, history=0)
    clean = _blocks(_claim_node(_explain(db_url)))
    with psycopg.connect(db_url) as conn:
        # 20,000 rows ahead of the pending ones in the claim's order, then settled (deleted)
        # with no vacuum since: what a drain leaves at the head of the index.
        seed_events(
            conn,
            "select 'shop' as source, 'settled' || g as idempotency_key"
            " from generate_series(1, 20000) g",
        )
        conn.execute(
            "insert into inbox_work (event_id, received_at, run_at)"
            " select id, received_at, now() - interval '1 hour'"
            " from inbox_events where idempotency_key like 'settled%%'"
        )
        conn.commit()
        settled = conn.execute(
            "delete from inbox_work where run_at < now() - interval '30 minutes'"
            " returning priority, run_at, event_id"
        ).fetchall()
        conn.commit()
    resumed = max(settled)
    _explain(db_url)  # the first scan from the start marks the dead entries as such
    from_start, from_last = _explain(db_url), _explain(db_url, resumed)
    assert _claim_node(from_start)["Actual Rows"] == _claim_node(from_last)["Actual Rows"] == 100
    start_blocks, resumed_blocks = _blocks(_claim_node(from_start)), _blocks(_claim_node(from_last))
    # From the start, the scan walks the dead entries' leaf pages (~100 for 20,000); resumed
    # after the last settled row, it reads what it read before they existed.
    assert start_blocks > clean + 100, (clean, start_blocks)
    assert resumed_blocks <= clean * 1.1 + 5, (clean, resumed_blocks)


def test_the_claim_cursor_resumes_after_full_batches_and_rescans_from_the_start() -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from processors._claiming.cursor import Claim, ClaimCursor

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def claim(n: int, last: int, window_end: int | None = None, key: str | None = None) -> Claim:
        end = None if window_end is None else (0, at, window_end)
        batch: Any = [SimpleNamespace(ordering_key=key)] * n
        return Claim(batch=batch, suspect_waiting=False, last=(0, at, last), window_end=end)

    cursor = ClaimCursor(rescan_seconds=1.0)
    assert cursor.start(100.0) == START
    assert cursor.from_start  # (the claim loop looks for suspects on such scans only)
    assert cursor.windowed
    cursor.claimed(claim(64, last=64), 64)
    assert cursor.start(100.1)[2] == 64  # a full batch: resume after it
    assert not cursor.from_start
    assert not cursor.windowed  # unordered work: the walk stops at a batch, no window needed
    cursor.claimed(claim(64, last=128), 64)
    assert cursor.start(100.2)[2] == 128
    cursor.claimed(claim(10, last=138), 64)
    assert cursor.start(100.3) == START  # a short batch: what was passed by may be behind
    assert cursor.windowed
    cursor.claimed(claim(64, last=202, key="k"), 64)
    assert cursor.start(100.4)[2] == 202
    assert cursor.windowed  # past ordered events: their keys' later events, a window only
    cursor.claimed(claim(64, last=266), 64)
    assert cursor.start(101.4) == START  # a second since the last scan from the start
    assert cursor.from_start
    cursor.claimed(claim(0, last=0), 64)
    assert cursor.start(101.5) == START
    # Short batches whose windows stopped before the queue's end (an ordered backlog whose
    # first rows wait for keys in flight): the start and the sweep past it take turns.
    cursor.claimed(claim(3, last=40, window_end=512), 64)
    assert cursor.start(101.6) == (0, at, 512)  # the sweep: the window after the start's
    cursor.claimed(claim(0, last=0, window_end=1024), 64)
    assert cursor.start(101.7) == START
    cursor.claimed(claim(5, last=90, window_end=512), 64)
    assert cursor.start(101.8) == (0, at, 1024)  # the sweep goes on where it stood
    cursor.claimed(claim(0, last=0), 64)  # this window reached the queue's end
    assert cursor.start(101.9) == START
    cursor.claimed(claim(2, last=7, window_end=512), 64)
    assert cursor.start(102.0) == (0, at, 512)  # a new sweep


def test_the_claim_stays_index_driven_when_the_claim_counters_bloat(db_url: str) -> None:
    # Statistics taken while a few counters were live, then 40,000 dead ones: why the
    # counters are probed per candidate row is told beside claim_batch (sql/queries.sql).
    with psycopg.connect(db_url) as conn:
        seed_events(
            conn,
            "select 'shop' as source, 'k' || g as idempotency_key from generate_series(1, 20000) g",
        )
        conn.execute(
            "insert into inbox_work (event_id, received_at)"
            " select id, received_at from inbox_events"
        )
        conn.execute(
            "insert into inbox_claims (event_id) select g from generate_series(-300, -1) g"
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")
        conn.execute(
            "insert into inbox_claims (event_id) select g from generate_series(1000000, 1040000) g"
        )
        conn.execute("delete from inbox_claims where event_id >= 1000000")
    plan = _explain(db_url)
    work_scans = _work_scans(_claim_node(plan))
    assert (work_scans[0]["Node Type"], work_scans[0].get("Index Name")) == (
        "Index Scan",
        "inbox_work_claim",
    )
    # The batch's rows, not the queue's.
    assert work_scans[0]["Actual Rows"] <= 100
    assert _claim_node(plan)["Actual Rows"] == 100


def test_an_ordered_claim_probes_the_key_slots_when_the_claim_counters_bloat(db_url: str) -> None:
    # As above, with every event ordered (5,000 keys): the key slots' NOT EXISTS, under an
    # OR, had a hashed alternative the planner took for the few counters its statistics
    # saw, and every claim read the whole bloated table to build it.
    with psycopg.connect(db_url) as conn:
        seed_events(
            conn,
            "select 'shop' as source, 'k' || g as idempotency_key from generate_series(1, 20000) g",
        )
        conn.execute(
            "insert into inbox_work (event_id, received_at, source, ordering_key, order_at,"
            " on_dead)"
            " select id, received_at, 'shop', 'key' || (id % 5000), now(), 'hold'"
            " from inbox_events"
        )
        conn.execute(
            "insert into inbox_claims (event_id, source, ordering_key)"
            " select g, 'shop', 'live' || g from generate_series(-300, -1) g"
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")
        conn.execute(
            "insert into inbox_claims (event_id, source, ordering_key)"
            " select g, 'shop', 'gone' || g from generate_series(1000000, 1040000) g"
        )
        conn.execute("delete from inbox_claims where event_id >= 1000000")
    plan = _explain(db_url)
    claims_scans = [
        (n["Node Type"], n.get("Index Name"))
        for n in _nodes(plan["Plan"])
        if n.get("Relation Name") == "inbox_claims"
    ]
    assert claims_scans == [
        ("Index Only Scan", "inbox_claims_pkey"),
        ("Index Only Scan", "inbox_claims_key"),
    ]
    assert _claim_node(plan)["Actual Rows"] == 100
