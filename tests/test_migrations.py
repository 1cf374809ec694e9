"""Migrations: up to head, down to empty, every step both ways; the schema serves the queries."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, NamedTuple

import psycopg
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from inbox._core.database import migrate as _migrate
from inbox._core.sql import load_queries

SQL_FILES = [
    ("inbox.sql", "queries.sql"),
    ("inbox.sql", "operator.sql"),
    ("inbox.sql", "replay.sql"),
    ("inbox.sql", "console.sql"),
    ("processors.sql", "queries.sql"),
]


def _user_objects(url: str) -> list[tuple[str, str]]:
    """Tables, columns, constraints, indexes, functions and triggers in the public schema
    (alembic's own table excluded)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            """
            select 'table', tablename::text from pg_tables
             where schemaname = 'public' and tablename <> 'alembic_version'
            union all
            select 'function', proname::text from pg_proc p
              join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public'
            union all
            select 'trigger', tgname::text from pg_trigger t
              join pg_class c on c.oid = t.tgrelid
              join pg_namespace n on n.oid = c.relnamespace
             where n.nspname = 'public' and not t.tgisinternal
            union all
            select 'column', table_name || '.' || column_name || ' ' || data_type
                   || ' ' || is_nullable || ' ' || coalesce(column_default, '')
              from information_schema.columns
             where table_schema = 'public' and table_name <> 'alembic_version'
            union all
            select 'constraint', conname || ' ' || pg_get_constraintdef(c.oid)
              from pg_constraint c
              join pg_namespace n on n.oid = c.connamespace
              left join pg_class t on t.oid = c.conrelid
             where n.nspname = 'public' and t.relname is distinct from 'alembic_version'
            union all
            select 'index', indexdef from pg_indexes
             where schemaname = 'public' and tablename <> 'alembic_version'
            order by 1, 2
            """
        ).fetchall()
    return [(str(kind), str(name)) for kind, name in rows]


def _revisions() -> list[str]:
    cfg = Config()
    cfg.set_main_option("script_location", str(_migrate._script_location()))
    script = ScriptDirectory.from_config(cfg)
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def test_upgrade_to_head_and_down_to_empty(empty_db_url: str) -> None:
    assert _migrate.current_revision(empty_db_url) is None
    _migrate.upgrade(empty_db_url)
    assert _migrate.current_revision(empty_db_url) == _migrate.head_revision()
    assert ("table", "inbox_events") in _user_objects(empty_db_url)
    _migrate.downgrade(empty_db_url, "base")
    assert _user_objects(empty_db_url) == []
    assert _migrate.current_revision(empty_db_url) is None


def test_every_revision_steps_down_and_up_again(empty_db_url: str) -> None:
    previous = "base"
    for revision in _revisions():
        _migrate.upgrade(empty_db_url, revision)
        after_up = _user_objects(empty_db_url)
        _migrate.downgrade(empty_db_url, previous)
        _migrate.upgrade(empty_db_url, revision)
        assert _user_objects(empty_db_url) == after_up, f"{revision} is not reversible"
        previous = revision


@pytest.mark.parametrize(("package", "filename"), SQL_FILES)
def test_every_named_query_prepares_against_the_head_schema(
    db_url: str, package: str, filename: str
) -> None:
    """The schema is what the code expects: each query plans against it."""
    queries = load_queries(package, filename)
    assert queries
    with psycopg.connect(db_url) as conn:
        for name, query in queries.items():
            # Preparing makes the server parse and analyse the statement: every table,
            # column and type it names must exist, without running it.
            result = conn.pgconn.prepare(name.encode(), _positional(query).encode())
            error = result.error_message.decode()
            assert result.status == psycopg.pq.ExecStatus.COMMAND_OK, f"{name}: {error}"


def _positional(query: str) -> str:
    """Turn %(name)s placeholders (or %(name)b, binary) into $n, the server's own form."""
    names: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        return f"${names.setdefault(match.group(1), len(names) + 1)}"

    return re.sub(r"%\((\w+)\)[sbt]", number, query)


def test_0007_steps_down_with_ordered_events_and_skips_recorded(empty_db_url: str) -> None:
    """Down from 0007 keeps the log (the ordering columns go) and its skip records (the
    append-only audit keeps them; the old kind check applies to new rows only)."""
    _migrate.upgrade(empty_db_url, "0007")
    with psycopg.connect(empty_db_url) as conn:
        conn.execute(
            "insert into inbox_events (source, idempotency_key, body, body_sha256,"
            " ordering_key, order_at, on_dead)"
            " values ('s', 'k', '', sha256(''), 'o', now(), 'hold')"
        )
        conn.execute(
            "insert into inbox_replays (kind, created_by, reason, filter, selected, queued)"
            " values ('dead-skip', 'olga', 'bad data', '{}', 1, 1)"
        )
    _migrate.downgrade(empty_db_url, "0006")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("select count(*) from inbox_events").fetchone() == (1,)
        assert conn.execute("select kind from inbox_replays").fetchall() == [("dead-skip",)]
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "insert into inbox_replays (kind, created_by, reason, filter, selected, queued)"
                " values ('dead-skip', 'olga', 'again', '{}', 1, 1)"
            )
    _migrate.upgrade(empty_db_url)
    assert _migrate.current_revision(empty_db_url) == _migrate.head_revision()


def test_0010_keeps_a_bounded_tracestate_and_steps_down_keeping_the_log(
    empty_db_url: str,
) -> None:
    """0010's column holds at most the 512 characters W3C asks a propagator to pass on;
    down, the log keeps its events (and their traceparent) without it."""
    _migrate.upgrade(empty_db_url, "0010")
    insert = (
        "insert into inbox_events (source, idempotency_key, body, body_sha256, traceparent,"
        " tracestate) values ('s', %s, '', sha256(''), '00-' || repeat('a', 32) || '-'"
        " || repeat('b', 16) || '-01', %s)"
    )
    with psycopg.connect(empty_db_url) as conn:
        conn.execute(insert, ["k1", "a=" + "x" * 510])
        conn.execute(insert, ["k2", None])
    with psycopg.connect(empty_db_url) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute(insert, ["k3", "a=" + "x" * 511])
    _migrate.downgrade(empty_db_url, "0009")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(
            "select idempotency_key, length(traceparent) from inbox_events order by id"
        ).fetchall() == [("k1", 55), ("k2", 55)]
    _migrate.upgrade(empty_db_url)
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(
            "select count(*) from inbox_events where tracestate is null"
        ).fetchone() == (2,)


class _Written(NamedTuple):
    event_id: int
    is_new: bool


def _write_as_at_0012(
    conn: psycopg.Connection[Any], source: str, key: str, body: bytes
) -> _Written:
    """A write as the writer made it at 0012 to 0015 (today's needs 0016's function)."""
    [(event_id, is_new)] = conn.execute(
        """
        with keyed as (
            insert into inbox_keys (source, idempotency_key, body_sha256)
            values (%(source)s, %(key)s, sha256(%(body)s))
            on conflict (source, idempotency_key) do nothing
            returning event_id, received_at
        ),
        inserted as (
            insert into inbox_events (id, received_at, source, idempotency_key, body, body_sha256)
            select event_id, received_at, %(source)s, %(key)s, %(body)s, sha256(%(body)s)
            from keyed
        ),
        queued as (
            insert into inbox_work (event_id, received_at)
            select event_id, received_at from keyed
        ),
        known as (
            select event_id, body_sha256 from inbox_keys
            where source = %(source)s and idempotency_key = %(key)s
              and not exists (select from keyed)
        ),
        delivered as (
            insert into inbox_deliveries (event_id, body_sha256, body)
            select event_id, sha256(%(body)s),
                   case when body_sha256 <> sha256(%(body)s) then %(body)s end
            from known
        )
        select event_id, true from keyed
        union all
        select event_id, false from known
        """,
        {"source": source, "key": key, "body": body},
    ).fetchall()
    return _Written(event_id, is_new)


def test_0012_moves_dedupe_to_the_key_table_and_steps_down_keeping_it(
    empty_db_url: str,
) -> None:
    """Up from 0011 on a filled log: every key is copied (the write path finds the old ones
    as duplicates), attempts and work rows get their event's receipt time, and new ids go
    on after the old ones; down, the log keeps its events and its unique key again."""
    _migrate.upgrade(empty_db_url, "0011")
    with psycopg.connect(empty_db_url) as conn:
        conn.execute(
            "insert into inbox_events (source, idempotency_key, body, body_sha256, received_at)"
            " select 's', 'k' || g, 'b', sha256('b'), now() - make_interval(hours => g)"
            " from generate_series(1, 120) g"
        )
        conn.execute(
            "insert into inbox_attempts (event_id, attempt, started_at, outcome)"
            " select id, 1, now(), 'processed' from inbox_events where id <= 100"
        )
        conn.execute("insert into inbox_work (event_id) select id from inbox_events where id > 100")
    _migrate.upgrade(empty_db_url, "0012")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(
            "select count(*) from inbox_keys k join inbox_events e on e.id = k.event_id"
            " and e.received_at = k.received_at and e.idempotency_key = k.idempotency_key"
        ).fetchone() == (120,)
        assert conn.execute(
            "select count(*) from inbox_attempts a join inbox_events e on e.id = a.event_id"
            " where a.received_at = e.received_at"
        ).fetchone() == (100,)
        assert conn.execute(
            "select count(*) from inbox_work w join inbox_events e on e.id = w.event_id"
            " where w.received_at = e.received_at"
        ).fetchone() == (20,)
    with psycopg.connect(empty_db_url) as conn:
        old = _write_as_at_0012(conn, "s", "k7", b"b")
        new = _write_as_at_0012(conn, "s", "fresh", b"b")
    assert (old.event_id, old.is_new) == (7, False)
    assert new.is_new
    assert new.event_id > 120  # after the old ids (the duplicate drew one, as duplicates do)
    _migrate.downgrade(empty_db_url, "0011")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("select count(*) from inbox_events").fetchone() == (121,)
        assert conn.execute(
            "insert into inbox_events (source, idempotency_key, body, body_sha256)"
            " values ('s', 'after', '', sha256('')) returning id"
        ).fetchone() == (new.event_id + 1,)
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "insert into inbox_events (source, idempotency_key, body, body_sha256)"
                " values ('s', 'k7', '', sha256(''))"
            )
    _migrate.upgrade(empty_db_url)
    assert _migrate.current_revision(empty_db_url) == _migrate.head_revision()


def test_0013_partitions_a_filled_log_without_rewriting_it_and_steps_down(
    empty_db_url: str,
) -> None:
    """Up from 0012 on a filled log: the old tables become the first partitions as they
    are (the same rows, the same pages), the keys still dedupe, and new writes land in the
    new partitions; down, the three tables are plain again with every row."""
    _migrate.upgrade(empty_db_url, "0012")
    from inbox import InboxWriter

    with psycopg.connect(empty_db_url) as conn:
        old = [_write_as_at_0012(conn, "s", f"k{n}", b"b").event_id for n in range(30)]
        _write_as_at_0012(conn, "s", "k1", b"again")
    with psycopg.connect(empty_db_url) as conn:
        conn.execute(
            "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome)"
            " select event_id, received_at, 1, now(), 'processed' from inbox_keys"
        )
        conn.execute("delete from inbox_work where event_id <> %s", [old[0]])
        filenode = conn.execute("select pg_relation_filenode('inbox_events')").fetchone()
    _migrate.upgrade(empty_db_url)
    with psycopg.connect(empty_db_url) as conn:
        # Not rewritten: the old table is the first partition, its storage untouched.
        assert conn.execute(
            "select pg_relation_filenode('inbox_events_legacy'),"
            " (select count(*) from inbox_events_legacy), (select count(*) from inbox_events)"
        ).fetchone() == (filenode[0] if filenode else None, 30, 30)
        assert conn.execute("select count(*) from inbox_attempts_legacy").fetchone() == (30,)
        assert conn.execute("select count(*) from inbox_deliveries_legacy").fetchone() == (1,)
    with psycopg.connect(empty_db_url) as conn:
        # The first partition holds everything up to the day after tomorrow; the next ones
        # are made ahead.
        [(legacy_end,)] = conn.execute(
            "select hi from inbox_partitions where suffix = 'legacy'"
        ).fetchall()
    with InboxWriter(empty_db_url) as writer:
        assert not writer.write("s", "k5", b"b").is_new
        fresh = writer.write("s", "fresh", b"b", received_at=legacy_end + timedelta(hours=1))
    assert fresh.is_new
    assert fresh.event_id > max(old)
    with psycopg.connect(empty_db_url) as conn:
        [(partition,)] = conn.execute(
            "select tableoid::regclass::text from inbox_events where id = %s", [fresh.event_id]
        ).fetchall()
        assert partition.startswith("inbox_events_p")
    _migrate.downgrade(empty_db_url, "0012")
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute(
            "select relkind from pg_class where relname = 'inbox_events'"
        ).fetchone() == ("r",)
        assert conn.execute("select count(*) from inbox_events").fetchone() == (31,)
        assert conn.execute("select count(*) from inbox_attempts").fetchone() == (30,)
        assert conn.execute("select count(*) from inbox_deliveries").fetchone() == (2,)
    _migrate.upgrade(empty_db_url)
    assert _migrate.current_revision(empty_db_url) == _migrate.head_revision()
