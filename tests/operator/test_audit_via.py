"""Migration 0005: the audit says where a run was started from (``via``), and a replay's
preview says how many of its events were already processed."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from inbox._core.database import migrate as _migrate
from inbox._operations.replay import replay, replay_runs, retry_dead
from inbox.queries import prune
from tests._wait import rows, scalar
from tests.processors._support import write_events


def test_a_console_run_records_its_user_and_via(db_url: str) -> None:
    [a, b] = write_events(db_url, 2)
    console = replay(db_url, reason="ticket 9", ids=[a], actor="olga", via="console")
    api = replay(db_url, reason="script", ids=[b])
    recorded = rows(db_url, "select id, created_by, via from inbox_replays order by id")
    assert recorded[0] == (console.replay_id, "olga", "console")
    assert recorded[1][0] == api.replay_id
    assert "@" in str(recorded[1][1])  # user@host, the process that called the API
    assert recorded[1][2] == "api"
    runs = replay_runs(db_url)
    assert [(r.id, r.via) for r in runs] == [(api.replay_id, "api"), (console.replay_id, "console")]


def test_retry_dead_records_via_and_unknown_via_is_refused(db_url: str) -> None:
    [a] = write_events(db_url, 1)
    with psycopg.connect(db_url) as conn:
        conn.execute("update inbox_work set state = 'dead', last_error = 'E: x'")
    result = retry_dead(db_url, reason="fixed", ids=[a], actor="olga", via="console")
    assert rows(
        db_url, "select kind, via from inbox_replays where id = %s", [result.replay_id]
    ) == [("dead-retry", "console")]
    with pytest.raises(ValueError, match="via must be one of cli, console, api"):
        replay(db_url, reason="x", ids=[a], via="web")  # type: ignore[arg-type]


def test_the_database_refuses_an_unknown_via(db_url: str) -> None:
    with psycopg.connect(db_url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "insert into inbox_replays (created_by, reason, filter, selected, queued, via)"
            " values ('x', 'y', '{}', 0, 0, 'web')"
        )
    with psycopg.connect(db_url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(
            "insert into inbox_prunes (created_by, older_than_seconds, cutoff, events_deleted,"
            " deliveries_deleted, attempts_deleted, events_kept, via)"
            " values ('x', 1, now(), 0, 0, 0, 0, 'web')"
        )


def test_a_prune_records_via(db_url: str) -> None:
    result = prune(db_url, timedelta(days=30), actor="olga", via="console")
    assert rows(
        db_url, "select created_by, via from inbox_prunes where id = %s", [result.audit_id]
    ) == [("olga", "console")]


def test_runs_recorded_before_0005_read_as_cli_and_the_column_goes_on_downgrade(
    empty_db_url: str,
) -> None:
    _migrate.upgrade(empty_db_url, "0004")
    with psycopg.connect(empty_db_url) as conn:
        conn.execute(
            "insert into inbox_replays (created_by, reason, filter, selected, queued)"
            " values ('ann@box', 'old run', '{}', 1, 1)"
        )
    _migrate.upgrade(empty_db_url, "0005")
    assert scalar(empty_db_url, "select via from inbox_replays") == "cli"
    _migrate.downgrade(empty_db_url, "0004")
    columns = scalar(
        empty_db_url,
        "select array_agg(column_name::text) from information_schema.columns"
        " where table_name in ('inbox_replays', 'inbox_prunes')",
    )
    assert "via" not in columns
    assert scalar(empty_db_url, "select created_by from inbox_replays") == "ann@box"


def test_the_preview_counts_events_already_processed(db_url: str) -> None:
    [done, failed, fresh] = write_events(db_url, 3)
    with psycopg.connect(db_url) as conn:
        conn.execute("delete from inbox_work where event_id = any(%s)", [[done, failed]])
        conn.execute(
            "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
            " select a.event_id, k.received_at, a.attempt, now(), a.outcome"
            " from (values (%s, 1, 'failed'), (%s, 2, 'processed'), (%s, 1, 'processed'),"
            " (%s, 1, 'dead')) as a(event_id, attempt, outcome)"
            " join inbox_keys k on k.event_id = a.event_id::bigint",
            [done, done, done, failed],
        )
    preview = replay(db_url, reason="check", ids=[done, failed, fresh], dry_run=True)
    assert (preview.selected, preview.already_processed, preview.already_pending) == (3, 1, 1)
    assert preview.to_json()["already_processed"] == 1
