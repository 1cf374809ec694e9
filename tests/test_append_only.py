"""The log is append-only, enforced by the database itself."""

from __future__ import annotations

import psycopg
import pytest

from inbox import InboxWriter
from tests._log import seed_events

APPEND_ONLY = ["inbox_events", "inbox_keys", "inbox_deliveries", "inbox_attempts"]


@pytest.fixture
def seeded(db_url: str) -> str:
    with InboxWriter(db_url) as writer:
        event = writer.write("stripe", "evt_1", b"one")
        writer.write("stripe", "evt_1", b"two")
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
            " select event_id, received_at, 1, now(), 'processed' from inbox_keys"
            " where event_id = %s",
            [event.event_id],
        )
    return db_url


@pytest.mark.parametrize("table", APPEND_ONLY)
@pytest.mark.parametrize(
    ("statement", "verb"),
    [
        ("update {t} set received_at = received_at", "UPDATE"),
        ("delete from {t}", "DELETE"),
        ("truncate {t} cascade", "TRUNCATE"),
    ],
)
def test_changing_history_is_refused_with_a_clear_message(
    seeded: str, table: str, statement: str, verb: str
) -> None:
    with (
        psycopg.connect(seeded) as conn,
        pytest.raises(psycopg.errors.RaiseException) as info,
    ):
        conn.execute(statement.format(t=table))
    assert f"{table} is append-only; {verb} is not allowed" in str(info.value)
    assert info.value.diag.message_hint is not None
    assert "inbox prune" in info.value.diag.message_hint


def test_the_body_cannot_be_rewritten_even_by_the_owner(seeded: str) -> None:
    with psycopg.connect(seeded) as conn:
        with pytest.raises(psycopg.errors.RaiseException):
            conn.execute("update inbox_events set body = 'forged'")
        conn.rollback()
        row = conn.execute("select body from inbox_events").fetchone()
    assert row == (b"one",)


def test_the_old_setting_no_longer_opens_the_guard(seeded: str) -> None:
    with psycopg.connect(seeded) as conn:
        conn.execute("select set_config('inbox.retention', 'prune', true)")
        with pytest.raises(psycopg.errors.RaiseException, match="DELETE is not allowed"):
            conn.execute("delete from inbox_events")


def test_the_prune_function_drops_and_audits_but_the_door_stays_shut_after(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        [old] = seed_events(
            conn,
            "select 's' as source, 'old' as idempotency_key,"
            " now() - interval '100 days' as received_at",
        )
        seed_events(conn, "select 's' as source, 'new' as idempotency_key")
        conn.commit()
        row = conn.execute(
            "select events_deleted, partitions_dropped -> 0 ->> 'events'"
            " from inbox_prune(90 * 86400, 'test', 'api')"
        ).fetchone()
        assert row == (1, "1")
        assert conn.execute("select count(*) from inbox_prunes").fetchone() == (1,)
        assert conn.execute("select id from inbox_events").fetchall() != [(old,)]
        # The door was open for the function's call alone, even within its transaction.
        with pytest.raises(psycopg.errors.RaiseException, match="DELETE is not allowed"):
            conn.execute("delete from inbox_events")
