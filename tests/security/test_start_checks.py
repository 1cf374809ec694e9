"""A part whose role lacks a privilege it needs refuses to start, naming the role, the
missing privilege and the GRANT to run; each part connects with its own URL."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psycopg
import pytest

from inbox._core.database.privileges import NEEDS, missing_privileges, require_privileges
from inbox._core.errors import ConfigError
from tests._commands import environment, run_inbox, start_serve, status_of
from tests._log import seed_events
from tests.security.conftest import Roles


def _inbox(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_inbox(*args, env=environment(**env))


@pytest.mark.parametrize("part", sorted(NEEDS))
def test_each_group_role_holds_every_need_of_its_part(roles: Roles, part: str) -> None:
    with psycopg.connect(roles.url(part)) as conn:
        role, missing = missing_privileges(conn, part)
    assert role == roles.login(part)
    assert missing == []


def test_the_receiver_role_is_not_enough_for_the_worker(roles: Roles) -> None:
    with pytest.raises(ConfigError) as info:
        require_privileges(roles.url("receiver"), "worker", "inbox worker")
    message = str(info.value)
    login = roles.login("receiver")
    assert f'the database role "{login}" lacks SELECT on inbox_events' in message
    assert f'GRANT inbox_worker TO "{login}"' in message
    assert f'GRANT SELECT ON inbox_events TO "{login}"' in message


def test_a_worker_with_the_wrong_role_refuses_to_start(db_url: str, roles: Roles) -> None:
    result = _inbox(
        {"INBOX_DATABASE__URL": db_url, "INBOX_DATABASE__WORKER_URL": roles.url("receiver")},
        "worker",
        "--app",
        "tests.processors.fault_app:router",
    )
    assert result.returncode == 2, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("inbox: error:")]
    assert f'inbox worker: the database role "{roles.login("receiver")}" lacks' in line
    assert "GRANT inbox_worker TO" in line


def test_operator_commands_use_the_operator_url_and_prune_the_retention_url(
    db_url: str, roles: Roles
) -> None:
    with psycopg.connect(db_url) as conn:  # settled long ago: no work row, prunable
        seed_events(
            conn,
            "select 'shop' as source, 'k1' as idempotency_key,"
            " timestamptz '2020-01-01' as received_at",
        )
    env = {
        "INBOX_DATABASE__URL": "postgresql://nobody@127.0.0.1:1/nothing",
        "INBOX_DATABASE__OPERATOR_URL": roles.url("operator"),
        "INBOX_DATABASE__RETENTION_URL": roles.url("retention"),
    }
    status = _inbox(env, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)
    shown = _inbox(env, "events", "show", "shop:k1", "--json")
    assert shown.returncode == 0, shown.stderr
    pruned = _inbox(env, "prune", "--older-than", "400d", "--yes")
    assert pruned.returncode == 0, pruned.stderr
    with psycopg.connect(db_url) as conn:
        assert conn.execute("select events_deleted from inbox_prunes").fetchall() == [(1,)]


def _serve_config(folder: Path, database: str, port: int) -> Path:
    """A config of one open source, served on ``port``, with ``database`` settings."""
    config = folder / "inbox.toml"
    source = 'name = "open"\nverifier = "none"\nkey_from = "body-sha256"'
    config.write_text(
        f"[database]\n{database}\n[receiver]\nport = {port}\n[[sources]]\n{source}\n",
        encoding="utf-8",
    )
    return config


def test_serve_with_a_role_that_cannot_append_refuses_to_start(
    tmp_path: Path, db_url: str, roles: Roles, unused_tcp_port: int
) -> None:
    database = f'url = "{db_url}"\nreceiver_url = "{roles.url("worker")}"'
    config = _serve_config(tmp_path, database, unused_tcp_port)
    result = _inbox({}, "--config", str(config), "serve")
    assert result.returncode == 2, result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("inbox: error:")]
    login = roles.login("worker")
    assert f'inbox serve: the database role "{login}" lacks EXECUTE on inbox_write_event(' in line
    assert f'GRANT inbox_receiver TO "{login}"' in line


def test_serve_as_the_receiver_role_starts(
    tmp_path: Path, roles: Roles, unused_tcp_port: int
) -> None:
    """The check passes for the receiver role: the process is still serving after it."""
    from tests._wait import wait_for

    config = _serve_config(tmp_path, f'url = "{roles.url("receiver")}"', unused_tcp_port)
    process = start_serve(config)
    base = f"http://127.0.0.1:{unused_tcp_port}"

    def accepted() -> bool:
        assert process.poll() is None, process.communicate()[1]
        return status_of("POST", base + "/webhooks/open", content=b'{"a": 1}') == 200

    try:
        wait_for(accepted, timeout=30, what="the receiver to accept a webhook")
    finally:
        process.terminate()
        process.communicate(timeout=30)
