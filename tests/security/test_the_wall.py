"""The database is the wall: each part, logged in as its least role and sending whatever
SQL it likes, can do only what its job needs (docs/security.md, "The roles")."""

from __future__ import annotations

import hashlib

import psycopg
import pytest

from inbox import InboxWriter, queries
from tests.security.conftest import Roles


def _processed(db_url: str, key: str = "evt_1") -> tuple[int, object]:
    """A processed event: its work gone, its attempt on record. Its id and receipt time."""
    with InboxWriter(db_url) as writer:
        event_id = writer.write("stripe", key, b'{"paid": 1}').event_id
    with psycopg.connect(db_url) as conn:
        [(received_at,)] = conn.execute(
            "delete from inbox_work where event_id = %s returning received_at", [event_id]
        ).fetchall()
        conn.execute(
            "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
            " values (%s, %s, 1, now(), 'processed')",
            [event_id, received_at],
        )
    return event_id, received_at


def _dead(db_url: str, key: str = "evt_dead") -> int:
    with InboxWriter(db_url) as writer:
        event_id = writer.write("stripe", key, b"{}").event_id
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "update inbox_work set state = 'dead', attempts = 5, last_error = 'E: boom'"
            " where event_id = %s",
            [event_id],
        )
    return event_id


def _sha(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()


def _work(db_url: str) -> list[tuple[object, ...]]:
    with psycopg.connect(db_url) as conn:
        return conn.execute("select event_id, state from inbox_work order by event_id").fetchall()


# --- the receiver ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "insert into inbox_work (event_id, received_at) values (%(id)s, %(at)s)",
        "insert into inbox_keys (source, idempotency_key, body_sha256)"
        " values ('x', 'y', sha256(''))",
        "insert into inbox_events (id, received_at, source, idempotency_key, body,"
        " body_sha256) values (%(id)s + 1, %(at)s, 'x', 'y', '', sha256(''))",
        "select * from inbox_keys",
    ],
)
def test_the_receiver_touches_no_table_directly(db_url: str, roles: Roles, statement: str) -> None:
    event_id, received_at = _processed(db_url)
    with (
        psycopg.connect(roles.url("receiver")) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for table"),
    ):
        conn.execute(statement, {"id": event_id, "at": received_at})
    assert _work(db_url) == []


def test_the_receiver_cannot_queue_a_stored_event_again(db_url: str, roles: Roles) -> None:
    """Through the write function, a stored event's key is a duplicate: a delivery, no work,
    whether the key is named plainly or shadowed by a temporary table of that name (the
    function's search_path is pinned)."""
    event_id, _ = _processed(db_url)
    with psycopg.connect(roles.url("receiver")) as conn:
        conn.execute(
            "create temp table inbox_keys (source text, idempotency_key text, event_id bigint,"
            " received_at timestamptz, body_sha256 bytea)",
        )
        again = conn.execute(
            "select * from inbox_write_event('stripe', 'evt_1', null, null, null, %s, %s,"
            " null, null, null, null, null, null, false)",
            [b'{"paid": 1}', _sha(b'{"paid": 1}')],
        ).fetchall()
        conn.commit()
    assert again == [(event_id, False)]
    assert _work(db_url) == []
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_deliveries").fetchone() == (1,)


def test_a_receiver_left_with_its_old_grant_still_queues_nothing(db_url: str, roles: Roles) -> None:
    """Before `inbox db roles` moves it to the write functions (migration 0018), a receiver
    may still hold INSERT on the queue: row security, with no policy for INSERT, refuses."""
    event_id, received_at = _processed(db_url)
    with psycopg.connect(db_url) as conn:
        conn.execute(
            f'grant insert (event_id, received_at) on inbox_work to "{roles.login("receiver")}"'
        )
    with (
        psycopg.connect(roles.url("receiver")) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
    ):
        conn.execute(
            "insert into inbox_work (event_id, received_at) values (%s, %s)",
            [event_id, received_at],
        )
    assert _work(db_url) == []


def test_the_receiver_cannot_forge_a_delivery(db_url: str, roles: Roles) -> None:
    event_id, _ = _processed(db_url)
    with (
        psycopg.connect(roles.url("receiver")) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(
            "insert into inbox_deliveries (event_id, body_sha256, body)"
            " values (%s, sha256('x'), 'x')",
            [event_id],
        )
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_deliveries").fetchone() == (0,)


def test_the_receiver_writes_inside_a_callers_savepoint(db_url: str, roles: Roles) -> None:
    """A write joined to an application's transaction, in a savepoint: its key's xmin is
    the subtransaction's, still this transaction's."""
    with (
        psycopg.connect(roles.url("receiver")) as conn,
        InboxWriter(roles.url("receiver")) as writer,
    ):
        with conn.transaction(), conn.transaction():
            result = writer.write("stripe", "evt_sp", b"{}", conn=conn)
        again = writer.write("stripe", "evt_sp", b"other", conn=conn)
        conn.commit()
    assert result.is_new
    assert (again.event_id, again.is_new) == (result.event_id, False)
    assert _work(db_url) == [(result.event_id, "pending")]


def test_the_receivers_group_commit_queues_its_new_events(db_url: str, roles: Roles) -> None:
    import asyncio

    from inbox import AsyncInboxWriter

    async def write_many() -> list[int]:
        async with AsyncInboxWriter(roles.url("receiver")) as writer:
            done = await asyncio.gather(
                *(writer.write("stripe", f"evt_{n}", b"{}") for n in range(40))
            )
        return [r.event_id for r in done]

    ids = asyncio.run(write_many())
    assert sorted(row[0] for row in _work(db_url)) == sorted(ids)


# --- the operator ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "update inbox_work set state = 'pending', attempts = 0",
        "insert into inbox_work (event_id, received_at) select event_id, received_at"
        " from inbox_keys",
        "insert into inbox_replays (created_by, reason, filter, selected, queued)"
        " values ('someone', 'r', '{}', 0, 0)",
        "select nextval('inbox_replays_id_seq')",
        "delete from inbox_work",
    ],
)
def test_the_operator_changes_nothing_directly(db_url: str, roles: Roles, statement: str) -> None:
    _processed(db_url)
    dead = _dead(db_url)
    with (
        psycopg.connect(roles.url("operator")) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(statement)
    assert _work(db_url) == [(dead, "dead")]


def test_the_operator_cannot_queue_under_an_old_run(db_url: str, roles: Roles) -> None:
    event_id, _ = _processed(db_url)
    old = queries.replay(
        roles.url("operator"), reason="fix", ids=[event_id], actor="ann@box"
    ).replay_id
    with psycopg.connect(db_url) as conn:
        conn.execute("delete from inbox_work")
    with psycopg.connect(roles.url("operator")) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="not begun in this"):
            conn.execute("select inbox_replay_enqueue(%s, array[%s]::bigint[], 0)", [old, event_id])
        conn.rollback()
        # Nor under a run that says it queues fewer than it does.
        run = conn.execute(
            "select inbox_replay_begin('replay', 'ann', 'r', '{}', 0, 0, null, 'api', null)"
        ).fetchone()
        assert run is not None
        with pytest.raises(psycopg.errors.SerializationFailure):
            conn.execute(
                "select inbox_replay_enqueue(%s, array[%s, -1]::bigint[], 0)", [run[0], event_id]
            )
    assert _work(db_url) == []


def test_replays_retries_and_skips_record_the_login(db_url: str, roles: Roles) -> None:
    event_id, _ = _processed(db_url)
    dead = _dead(db_url)
    skipped = _dead(db_url, "evt_skip")
    operator = roles.url("operator")
    replayed = queries.replay(operator, reason="fix", ids=[event_id], actor="ann@box")
    retried = queries.retry_dead(operator, reason="fixed", ids=[dead], actor="ann@box")
    skip = queries.skip_dead(operator, ids=[skipped], reason="moot", actor="bob@elsewhere")
    assert (replayed.queued, retried.queued, skip.skipped) == (1, 1, [skipped])
    login = roles.login("operator")
    with psycopg.connect(db_url) as conn:
        assert conn.execute(
            "select id, kind, created_by, login, queued from inbox_replays order by id"
        ).fetchall() == [
            (replayed.replay_id, "replay", "ann@box", login, 1),
            (retried.replay_id, "dead-retry", "ann@box", login, 1),
            (skip.skip_id, "dead-skip", "bob@elsewhere", login, 1),
        ]
    assert _work(db_url) == [(event_id, "pending"), (dead, "pending")]


# --- the worker --------------------------------------------------------------------------


def test_the_worker_cannot_settle_a_dead_letter(db_url: str, roles: Roles) -> None:
    dead = _dead(db_url)
    with psycopg.connect(roles.url("worker")) as conn:
        assert conn.execute("delete from inbox_work").rowcount == 0
        assert conn.execute("update inbox_work set state = 'pending'").rowcount == 0
    assert _work(db_url) == [(dead, "dead")]


def test_the_worker_writes_attempts_only_for_events_with_work(db_url: str, roles: Roles) -> None:
    event_id, received_at = _processed(db_url)
    statement = (
        "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
        " values (%s, %s, 1, now(), 'processed')"
    )
    with psycopg.connect(roles.url("worker")) as conn:
        for params in ([event_id, received_at], [-1, received_at]):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(statement, params)
            conn.rollback()
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select count(*) from inbox_attempts").fetchone() == (1,)
