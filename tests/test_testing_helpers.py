"""`inbox.testing` and `processors.testing`, the helpers for users' own tests (the test
that `inbox init` writes uses them all: tests/test_cli_init.py runs it)."""

from __future__ import annotations

from pathlib import Path

import inbox.testing
import processors.testing
from inbox import InboxWriter
from processors import Event, Router
from processors.testing import run_pending
from tests._wait import scalar


def test_the_helpers_export_the_documented_names_each_documented() -> None:
    assert inbox.testing.__all__ == [
        "SignedRequest",
        "deliver",
        "fresh_database",
        "settings_for_tests",
        "signed_request",
    ]
    assert processors.testing.__all__ == ["run_pending"]
    for module in (inbox.testing, processors.testing):
        for name in module.__all__:
            assert getattr(module, name).__doc__, name


def test_run_pending_returns_when_only_a_later_retry_is_left(db_url: str) -> None:
    router = Router()

    @router.on("demo")
    def fails(event: Event, conn: object) -> None:
        raise RuntimeError("not yet")

    with InboxWriter(db_url) as writer:
        writer.write(source="demo", key="k1", body=b"{}")
    run_pending(db_url, router)
    assert scalar(db_url, "select outcome from inbox_attempts") == "failed"
    assert scalar(db_url, "select run_at > now() from inbox_work") is True


def test_fresh_database_is_migrated_with_the_tables_and_dropped_after(
    pg_server: str, tmp_path: Path
) -> None:
    tables = tmp_path / "schema"
    tables.mkdir()
    (tables / "001.sql").write_text("create table if not exists mine (id int primary key);")
    with inbox.testing.fresh_database(pg_server, tables=[tables]) as url:
        assert scalar(url, "select count(*) from mine") == 0
        assert scalar(url, "select count(*) from inbox_events") == 0
        name = scalar(url, "select current_database()")
    assert scalar(pg_server, "select count(*) from pg_database where datname = %s", [name]) == 0
