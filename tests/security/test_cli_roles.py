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
                " has_column_privilege(%s, 'inbox_keys', 'body_sha256', 'select'),"
                " has_function_privilege(%s, 'inbox_write_event(text, text, text, text,"
                " jsonb, bytea, bytea, text, timestamptz, text, text, text, timestamptz,"
                " boolean)', 'execute')",
                [f"{prefix}_receiver"] * 4,
            ).fetchone()
        assert rows == sorted((name, False) for name in names)
        # It reads nothing; it writes through the owner's function.
        assert can_read == (False, False, False, True)
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
        '    "public".inbox_record_delivery(text, text, bytea, bytea)\n    to "pay_receiver"'
    ) in printed.stdout
    assert "{" not in printed.stdout


def test_a_bad_prefix_is_one_line_exit_2() -> None:
    bad = _inbox("postgresql://nobody@127.0.0.1:1/none", "--sql", "--prefix", 'x"; drop')
    assert bad.returncode == 2
    assert "bad role prefix" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
