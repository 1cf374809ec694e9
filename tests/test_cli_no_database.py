"""Commands without a database URL: only `inbox dev` makes an embedded server; the others
say where they looked, or use the server of a running `inbox dev`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inbox._cli.main import main
from inbox._core.config.settings import load_settings
from inbox._core.runtime.embedded import running_dev_server
from inbox._core.runtime.resolve import database_url


@pytest.fixture(autouse=True)
def _keep_logging_unconfigured(monkeypatch: pytest.MonkeyPatch) -> None:
    # main() in this process would configure structlog globally onto this test's captured
    # stderr, which later tests' loggers would then write to after it is closed.
    monkeypatch.setattr("inbox._cli.main.configure_logging", lambda **_kwargs: None)


@pytest.fixture
def empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("INBOX_"):
            monkeypatch.delenv(name)
    return tmp_path


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("command", [["status"], ["events", "list"], ["db", "upgrade"]])
def test_no_url_says_where_it_looked_and_makes_no_cluster(
    empty_folder: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert main(command) == 2
    err = _one_line_error(capsys)
    for looked_at in ("--config", "$INBOX_CONFIG", "./inbox.toml", "$INBOX_DATABASE_URL"):
        assert looked_at in err
    assert "inbox dev" in err
    assert list(empty_folder.iterdir()) == []  # no .inbox/, no 40 MB cluster


def test_a_config_without_url_is_named(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (empty_folder / "inbox.toml").write_text("[worker]\nmax_attempts = 3\n")
    assert main(["status"]) == 2
    assert "read inbox.toml" in _one_line_error(capsys)


def test_send_without_config_says_where_sources_come_from(
    empty_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["send", "stripe"]) == 2
    err = _one_line_error(capsys)
    assert "no sources configured" in err
    assert "--config, $INBOX_CONFIG, ./inbox.toml" in err


def _dev_server_running(folder: Path, url: str) -> Path:
    """What `inbox dev` leaves while it runs (this process stands in for it): its pid in the
    lock and the state file."""
    data = folder / ".inbox"
    data.mkdir()
    (data / "inbox.lock").write_text(str(os.getpid()))
    (data / "dev-server.json").write_text(json.dumps({"url": url, "pid": os.getpid()}))
    return data


def test_a_running_dev_server_is_found_and_a_dead_one_is_not(
    empty_folder: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _dev_server_running(empty_folder, db_url)
    assert main(["status"]) == 0
    err = capsys.readouterr().err
    assert f"using the database of the running `inbox dev` (pid {os.getpid()}" in err

    # A dev server that was killed left its files: its pid is gone.
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(gone.stdout)
    (data / "inbox.lock").write_text(str(dead))
    (data / "dev-server.json").write_text(json.dumps({"url": db_url, "pid": dead}))
    assert running_dev_server(data) is None
    assert main(["status"]) == 2
    assert "no database URL" in capsys.readouterr().err


def test_the_core_tells_through_the_say_it_is_given_and_prints_nothing(
    empty_folder: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _dev_server_running(empty_folder, db_url)
    said: list[str] = []
    with database_url(load_settings(None), say=said.append) as url:
        assert url == db_url
    assert len(said) == 1
    assert "using the database of the running `inbox dev`" in said[0]
    assert capsys.readouterr() == ("", "")
