"""`inbox db upgrade / current / downgrade` as a user runs them."""

from __future__ import annotations

import subprocess

from inbox._core.database import migrate as _migrate
from tests._commands import environment, run_inbox


def _inbox(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_inbox(*args, env=environment(INBOX_DATABASE__URL=url))


def test_db_commands_migrate_and_report(empty_db_url: str) -> None:
    current = _inbox(empty_db_url, "db", "current")
    assert current.returncode == 1
    assert "base (empty)" in current.stdout

    up = _inbox(empty_db_url, "db", "upgrade")
    assert up.returncode == 0, up.stderr
    head = _migrate.head_revision()
    assert f"database at revision {head}" in up.stdout

    current = _inbox(empty_db_url, "db", "current")
    assert current.returncode == 0
    assert "up to date" in current.stdout

    down = _inbox(empty_db_url, "db", "downgrade", "base")
    assert down.returncode == 0, down.stderr
    assert _migrate.current_revision(empty_db_url) is None


def test_a_bad_config_is_reported_with_exit_code_2() -> None:
    env_result = run_inbox("db", "current", env=environment(INBOX_WORKER__MAX_ATTEMPTS="zero"))
    assert env_result.returncode == 2
    assert "worker.max_attempts" in env_result.stderr
