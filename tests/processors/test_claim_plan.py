"""The claim stays index-driven, and its cost does not grow with the history."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from processors._store import CLAIM_BATCH

PENDING = 500


def _load(url: str, history: int) -> None:
    """``history`` settled events with an attempt each, then PENDING events still to do."""
    with psycopg.connect(url) as conn:
        conn.execute(
            "insert into inbox_events (source, idempotency_key, body, body_sha256)"
            " select 'shop', 'k' || g, '{}', sha256('{}') from generate_series(1, %s) g",
            [history + PENDING],
        )
        conn.execute(
            "insert into inbox_attempts (event_id, attempt, started_at, outcome)"
            " select id, 1, now(), 'processed' from inbox_events where id <= %s",
            [history],
        )
        conn.execute(
            "insert into inbox_work (event_id) select id from inbox_events where id > %s",
            [history],
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")


def _explain(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "explain (analyze, buffers, format json) " + CLAIM_BATCH, {"batch_size": 100}
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


def _claim_node(plan: dict[str, Any]) -> dict[str, Any]:
    """The locking scan of inbox_work: the claim proper, before the log is joined."""
    [locking] = [n for n in _nodes(plan["Plan"]) if n["Node Type"] == "LockRows"]
    return locking


def test_the_claim_walks_the_partial_index(db_url: str, worker_url: str) -> None:
    _load(db_url, history=1000)
    plan = _explain(worker_url)
    work_scans = [n for n in _nodes(plan["Plan"]) if n.get("Relation Name") == "inbox_work"]
    assert [n["Node Type"] for n in work_scans] == ["Index Scan"]
    assert work_scans[0]["Index Name"] == "inbox_work_claim"
    assert plan["Plan"]["Actual Rows"] == 100


def test_the_claim_costs_the_same_with_a_hundred_times_more_history(
    db_url: str, empty_db_url: str
) -> None:
    from inbox._core import migrate as _migrate

    _migrate.upgrade(empty_db_url)
    _load(db_url, history=1_000)
    _load(empty_db_url, history=100_000)
    small_plan, large_plan = _explain(db_url), _explain(empty_db_url)
    # The work table holds only what is pending: the claim reads the same blocks whatever
    # the history's size.
    small, large = _blocks(_claim_node(small_plan)), _blocks(_claim_node(large_plan))
    assert large <= small * 1.2 + 10, f"the claim read {small} blocks, then {large}"
    # The claimed events are then fetched from the log by primary key: a few blocks each
    # (the depth of the index), however long the log is.
    fetches = [n for n in _nodes(large_plan["Plan"]) if n.get("Relation Name") == "inbox_events"]
    assert [n.get("Index Name") for n in fetches] == ["inbox_events_pkey"]
    assert _blocks(fetches[0]) <= 4 * 100


def test_the_next_due_lookup_probes_the_claim_index(db_url: str, worker_url: str) -> None:
    from processors._store import NEXT_DUE

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
