"""`inbox db roles` as a DBA runs it: idempotent, printable, refusing bad input."""

from __future__ import annotations

import subprocess
import uuid

import psycopg
from psycopg import sql

from inbox._core.database.roles import PARTS
from tests.test_cli_db import _inbox as run_inbox


def _inbox(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_inbox(url, "db", "roles", *args)


def test_roles_are_created_once_and_granting_again_changes_nothing(db_url: str) -> None:
    prefix = f"c{uuid.uuid4().hex[:10]}"
    names = [f"{prefix}_{part}" for part in PARTS]
    try:
        first = _inbox(db_url, "--prefix", prefix)
        assert first.returncode == 0, first.stderr
        assert f"{prefix}_receiver" in first.stdout
        again = _inbox(db_url, "--prefix", prefix)
        assert again.returncode == 0, again.stderr
        with psycopg.connect(db_url) as conn:
            rows = conn.execute(
                "select rolname, rolcanlogin from pg_roles where rolname = any(%s)"
                " order by rolname",
                [names],
            ).fetchall()
            can_read = conn.execute(
                "select has_column_privilege(%s, 'inbox_events', 'body', 'select'),"
                " has_column_privilege(%s, 'inbox_events', 'body_sha256', 'select'),"
                " has_column_privilege(%s, 'inbox_keys', 'body_sha256', 'select')",
                [f"{prefix}_receiver"] * 3,
            ).fetchone()
        assert rows == sorted((name, False) for name in names)
        # The duplicate path reads the key table only, never the log.
        assert can_read == (False, False, True)
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            for name in names:
                conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(name)))
                conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(name)))


def test_sql_is_printed_for_a_dba_without_touching_the_database() -> None:
    printed = _inbox("postgresql://nobody@127.0.0.1:1/none", "--sql", "--prefix", "pay")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("begin;")
    assert printed.stdout.rstrip().endswith("commit;")
    assert (
        "grant select (source, idempotency_key, event_id, received_at, body_sha256, xmin)\n"
        '    on "public".inbox_keys to "pay_receiver"'
    ) in printed.stdout
    assert "{" not in printed.stdout


def test_a_bad_prefix_is_one_line_exit_2() -> None:
    bad = _inbox("postgresql://nobody@127.0.0.1:1/none", "--sql", "--prefix", 'x"; drop')
    assert bad.returncode == 2
    assert "bad role prefix" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
