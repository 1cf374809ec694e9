"""`inbox.testing` and `processors.testing`, the helpers for users' own tests (the test
that `inbox init` writes uses them all: tests/test_cli_init.py runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import inbox.testing
import processors.testing
from inbox import InboxWriter
from inbox._core.config.settings import WorkerSettings
from processors import Event, Router
from processors.testing import run_pending, run_until
from tests._wait import scalar
from tests.processors._support import NO_RETRY_SOON


def test_the_helpers_export_the_documented_names_each_documented() -> None:
    documented = """SignedRequest create_database deliver drop_database fresh_database
        migrated_template new_database postgres_server settings_for_tests signed_request"""
    assert inbox.testing.__all__ == documented.split()
    assert processors.testing.__all__ == [
        "EventRehearsal",
        "Rehearsal",
        "TableWrites",
        "rehearse",
        "run_pending",
        "run_until",
    ]
    for module in (inbox.testing, processors.testing):
        for name in module.__all__:
            assert getattr(module, name).__doc__, name


def _one_event_that_fails(db_url: str) -> Router:
    router = Router()

    @router.on("demo")
    def fails(event: Event, conn: object) -> None:
        raise RuntimeError("not yet")

    with InboxWriter(db_url) as writer:
        writer.write(source="demo", key="k1", body=b"{}")
    return router


def test_run_pending_returns_when_only_a_later_retry_is_left(db_url: str) -> None:
    # Full jitter draws the retry's delay from [0, cap]: with the default cap it drew 22 ms
    # once, and the retry was due again before the assertion below. A week's cap keeps the
    # retry in the future whatever it draws (and run_pending must still return).
    settings = WorkerSettings(**NO_RETRY_SOON)
    run_pending(db_url, _one_event_that_fails(db_url), settings=settings)
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


def test_run_until_runs_until_the_condition_holds_and_says_when_it_never_does(
    db_url: str,
) -> None:
    router = _one_event_that_fails(db_url)
    fast = WorkerSettings(max_attempts=2, backoff_base_seconds=0.01, backoff_max_seconds=0.01)
    dead = "select count(*) from inbox_work where state = 'dead'"
    metrics = run_until(db_url, router, lambda: scalar(db_url, dead) == 1, settings=fast)
    assert (
        metrics.registry.get_sample_value(
            "inbox_attempts_total", {"source": "demo", "outcome": "dead"}
        )
        == 1
    )
    with pytest.raises(TimeoutError):
        run_until(db_url, router, lambda: False, timeout=0.5)


def test_a_migrated_template_is_cloned_per_database_and_each_dropped_after(
    pg_server: str, tmp_path: Path
) -> None:
    (tmp_path / "001.sql").write_text("create table mine (id int primary key);")
    with inbox.testing.migrated_template(pg_server, tables=[tmp_path]) as template:
        with (
            inbox.testing.new_database(pg_server, template=template) as one,
            inbox.testing.new_database(pg_server, template=template) as two,
            inbox.testing.new_database(pg_server) as empty,
        ):
            with InboxWriter(one) as writer:
                writer.write(source="demo", key="k1", body=b"{}")
            assert scalar(one, "select count(*) from inbox_events") == 1
            assert scalar(two, "select count(*) from inbox_events") == 0  # a copy of its own
            assert scalar(two, "select count(*) from mine") == 0
            assert scalar(empty, "select to_regclass('inbox_events')") is None
            names = [scalar(url, "select current_database()") for url in (one, two, empty)]
        assert scalar(pg_server, _COUNT_DATABASES, [names]) == 0
        names.append(template)
    assert scalar(pg_server, _COUNT_DATABASES, [names]) == 0


_COUNT_DATABASES = "select count(*) from pg_database where datname = any(%s)"
