"""Retention: the audited prune path, its refusals, and the guard that stays in place."""

from __future__ import annotations

import json
from datetime import timedelta

import psycopg
import pytest

from inbox import InboxWriter, RefusedError
from inbox.queries import prune
from tests._log import seed_events
from tests._wait import rows, scalar
from tests.operator._support import inbox


def _old_event(conn: psycopg.Connection, key: str, days: int, work: str | None) -> int:
    """An event received ``days`` ago, settled (work None) or with a work row left."""
    [event_id] = seed_events(
        conn,
        "select 'shop' as source, %s as idempotency_key,"
        " now() - make_interval(days => %s) as received_at, 'b' as body",
        [key, days],
    )
    conn.execute(
        "insert into inbox_deliveries (event_id, received_at, body_sha256)"
        " values (%s, now() - make_interval(days => %s), sha256('b'))",
        [event_id, days],
    )
    conn.execute(
        "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
        " values (%s, now() - make_interval(days => %s), 1, now() - make_interval(days => %s),"
        " %s)",
        [event_id, days, days, "failed" if work else "processed"],
    )
    if work is not None:
        conn.execute(
            "insert into inbox_work (event_id, received_at, state, attempts, last_error)"
            " select event_id, received_at, %s, 1, 'E: x' from inbox_keys where event_id = %s",
            [work, event_id],
        )
    return event_id


@pytest.fixture
def aged(db_url: str) -> dict[str, int]:
    """Events in three old weeks' partitions and a recent one: the oldest settled, the next
    with a pending and a dead event (so its partition is kept whole)."""
    with psycopg.connect(db_url) as conn:
        return {
            "old_done": _old_event(conn, "old-done", 120, None),
            "old_pending": _old_event(conn, "old-pending", 100, "pending"),
            "old_dead": _old_event(conn, "old-dead", 100, "dead"),
            "old_settled_beside": _old_event(conn, "old-settled-beside", 100, None),
            "recent_done": _old_event(conn, "recent-done", 5, None),
        }


def _events(url: str) -> set[int]:
    return {int(r[0]) for r in rows(url, "select id from inbox_events")}  # type: ignore[call-overload]


def test_prune_refuses_the_minimum_window_and_changes_nothing(
    db_url: str, aged: dict[str, int]
) -> None:
    refused = inbox(db_url, "prune", "--older-than", "3d", "--yes")
    assert refused.returncode == 2
    assert "minimum retention" in refused.stderr
    with pytest.raises(RefusedError, match="minimum retention"):
        prune(db_url, timedelta(days=6, hours=23))
    assert _events(db_url) == set(aged.values())
    assert scalar(db_url, "select count(*) from inbox_prunes") == 0


def test_prune_drops_only_whole_settled_partitions_and_audits_it(
    db_url: str, aged: dict[str, int]
) -> None:
    dry = inbox(db_url, "prune", "--older-than", "90d", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    preview = json.loads(dry.stdout)
    assert preview["events_deleted"] == 1
    assert [p["unsettled"] for p in preview["partitions_kept"]] == [2]
    assert _events(db_url) == set(aged.values())

    done = inbox(db_url, "prune", "--older-than", "90d", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["events_deleted"], result["deliveries_deleted"]) == (1, 1)
    assert (result["attempts_deleted"], result["events_kept"]) == (1, 2)
    [dropped] = result["partitions_dropped"]
    [kept] = result["partitions_kept"]
    # The partition holding a pending and a dead event is kept whole: the settled event
    # beside them too (never half-deleted); recent ones are not old enough.
    assert kept["unsettled"] == 2
    assert _events(db_url) == set(aged.values()) - {aged["old_done"]}
    [audit] = rows(
        db_url,
        "select id, events_deleted, events_kept, older_than_seconds, created_by,"
        " partitions_dropped -> 0 ->> 'partition', partitions_kept -> 0 ->> 'unsettled'"
        " from inbox_prunes",
    )
    assert audit[0] == result["audit_id"]
    assert audit[1:4] == (1, 2, 90 * 86400.0)
    assert "@" in str(audit[4])
    assert audit[5:] == (dropped["partition"], "2")
    # The whole partitions went: no table of that period is left behind.
    assert (
        scalar(
            db_url,
            "select count(*) from pg_class where relname like %s",
            [f"%_{dropped['partition']}"],
        )
        == 0
    )

    # The door closed with the prune's transaction: ordinary deletes are refused again.
    with psycopg.connect(db_url) as conn:
        for table in ("inbox_events", "inbox_attempts", "inbox_deliveries", "inbox_prunes"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(f"delete from {table}")
            conn.rollback()

    # Dedupe outlives the log: a pruned event's key is still a duplicate, with its id.
    with InboxWriter(db_url) as writer:
        again = writer.write("shop", "old-done", b"late retry")
        assert (again.event_id, again.is_new) == (aged["old_done"], False)
        assert not writer.write("shop", "old-pending", b"late retry").is_new
    assert (
        scalar(db_url, "select count(*) from inbox_work where event_id = %s", [again.event_id]) == 0
    )


def test_prune_through_the_api_on_a_caller_connection(db_url: str, aged: dict[str, int]) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        result = prune(conn, timedelta(days=90), actor="cron@host")
    assert (result.events_deleted, result.events_kept) == (1, 2)
    assert _events(db_url) == set(aged.values()) - {aged["old_done"]}
    assert rows(db_url, "select created_by from inbox_prunes") == [("cron@host",)]


def test_the_database_holds_the_minimum_whatever_the_caller_passes(
    db_url: str, aged: dict[str, int]
) -> None:
    with pytest.raises(RefusedError, match="minimum retention of 7 days"):
        prune(db_url, timedelta(days=4), minimum=timedelta(days=3))
    with psycopg.connect(db_url) as conn, pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("select * from inbox_prune(4 * 86400, 'me', 'api')")
    assert _events(db_url) == set(aged.values())
    assert scalar(db_url, "select count(*) from inbox_prunes") == 0


def test_a_prune_whose_drop_never_ran_is_caught_up_by_the_next(
    db_url: str, aged: dict[str, int]
) -> None:
    # The function alone detaches: its tables wait, out of the log, for the drop.
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("select * from inbox_prune(90 * 86400, 'cron@host', 'api')")
    waiting = "select count(*) from pg_class where relname like 'pruned\\_inbox\\_%%'"
    assert scalar(db_url, waiting) == 3
    assert _events(db_url) == set(aged.values()) - {aged["old_done"]}
    prune(db_url, timedelta(days=90))
    assert scalar(db_url, waiting) == 0
