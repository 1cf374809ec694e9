"""Least privilege, tried as an attacker would with each part's own connection."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from inbox import InboxWriter, queries
from tests._log import seed_events
from tests.security.conftest import Roles


def _seed(db_url: str) -> int:
    with InboxWriter(db_url) as writer:
        event = writer.write("stripe", "evt_1", b'{"card": "secret"}')
        writer.write("stripe", "evt_1", b"another body")
    return event.event_id


@pytest.mark.parametrize(
    "statement",
    [
        "select body from inbox_events",
        "select headers from inbox_events",
        "select * from inbox_events",
        "select body from inbox_deliveries",
        "update inbox_events set source = 'x'",
        "update inbox_work set attempts = 0",
        "delete from inbox_work",
        "delete from inbox_events",
        "delete from inbox_deliveries",
        "truncate inbox_events cascade",
        "select * from inbox_prune(0, 'me', 'api')",
    ],
)
def test_the_receiver_may_not_read_bodies_nor_change_or_delete_rows(
    db_url: str, roles: Roles, statement: str
) -> None:
    _seed(db_url)
    with (
        psycopg.connect(roles.url("receiver")) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(statement)
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_events").fetchone() == (1,)


def test_the_old_setting_trick_fails_as_the_receiver(db_url: str, roles: Roles) -> None:
    _seed(db_url)
    with psycopg.connect(roles.url("receiver")) as conn:
        conn.execute("set local inbox.retention = 'prune'")
        conn.execute("set local inbox.prune_door = 'open'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("delete from inbox_work")
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_work").fetchone() == (1,)


def test_even_a_role_granted_delete_cannot_forge_the_prune_door(db_url: str, roles: Roles) -> None:
    """The old bypass of the prune door (docs/security.md), by a role that holds DELETE
    (granted by mistake): the append-only guard itself refuses, whatever the session sets."""
    _seed(db_url)
    login = roles.login("operator")
    with psycopg.connect(db_url) as conn:
        conn.execute(f'grant delete on inbox_work, inbox_events to "{login}"')
    with psycopg.connect(roles.url("operator")) as conn:
        conn.execute("set local inbox.retention = 'prune'")
        conn.execute("set local inbox.prune_door = 'open'")
        conn.execute("delete from inbox_work")
        with pytest.raises(psycopg.errors.RaiseException, match="DELETE is not allowed"):
            conn.execute("delete from inbox_events")
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_events").fetchone() == (1,)


def test_the_receiver_writes_new_events_and_duplicates(db_url: str, roles: Roles) -> None:
    with InboxWriter(roles.url("receiver")) as writer:
        first = writer.write("stripe", "evt_1", b"one")
        again = writer.write("stripe", "evt_1", b"two")
        same = writer.write("stripe", "evt_1", b"one")
    assert first.is_new
    assert not again.is_new
    assert not same.is_new
    assert again.event_id == first.event_id == same.event_id
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_work").fetchone() == (1,)
        assert conn.execute("select body from inbox_deliveries order by id").fetchall() == [
            (b"two",),
            (None,),
        ]


def test_prune_works_only_as_retention_and_is_audited(db_url: str, roles: Roles) -> None:
    with psycopg.connect(db_url) as conn:  # settled long ago: its partition is prunable
        seed_events(
            conn,
            "select 'shop' as source, 'old' as idempotency_key,"
            " now() - interval '100 days' as received_at",
        )
    for part in ("receiver", "worker", "operator"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            queries.prune(roles.url(part), timedelta(days=90))
    preview = queries.prune(roles.url("retention"), timedelta(days=90), dry_run=True)
    assert (preview.events_deleted, preview.events_kept) == (1, 0)
    result = queries.prune(roles.url("retention"), timedelta(days=90), actor="olga")
    assert (result.events_deleted, len(result.partitions_dropped)) == (1, 1)
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_events").fetchone() == (0,)
        assert conn.execute("select created_by, events_deleted from inbox_prunes").fetchall() == [
            ("olga", 1)
        ]
    # The retention role reads nothing itself.
    with (
        psycopg.connect(roles.url("retention")) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("select id from inbox_prunes")


def test_the_retention_role_cannot_go_under_the_minimum_nor_move_it(
    db_url: str, roles: Roles
) -> None:
    with psycopg.connect(db_url) as conn:
        seed_events(conn, "select 'shop' as source, 'new' as idempotency_key")
    with psycopg.connect(roles.url("retention")) as conn:
        # Calling the function directly, under the minimum (none, negative, a minute, a
        # second short of the default 7 days): refused by the database.
        for window in (0, -86400 * 365, 60, 7 * 86400 - 1):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="minimum retention"):
                conn.execute("select * from inbox_prune(%s, 'me', 'api')", [window])
            conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("update inbox_retention set minimum_days = 1")
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_events").fetchone() == (1,)
