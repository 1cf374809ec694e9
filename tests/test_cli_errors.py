"""Bad input on the command line: one line naming the bad value and the fix, exit 2, never a
traceback — whichever command, whichever argument, whichever setting."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import structlog

from inbox._cli.main import main
from inbox._core.config.settings import MAX_BATCH_SIZE
from tests.operator._support import env_for, inbox

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Run]:
    """``run(*args) -> (exit code, stdout, stderr)`` through the CLI's ``main``."""
    monkeypatch.chdir(tmp_path)  # no ./inbox.toml, and nothing is created in the repo
    for name in ("INBOX_CONFIG", "INBOX_DATABASE_URL", "INBOX_DATABASE__URL"):
        monkeypatch.delenv(name, raising=False)
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)

    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's way out
            code = exc.code if isinstance(exc.code, int) else 2
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    structlog.reset_defaults()  # main configured logging for the process
    root.setLevel(level)
    root.handlers[:] = handlers


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "error:" in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["events", "show", "foo"], ["'foo'", "SOURCE:KEY"]),
        (["events", "show", "stripe:"], ["'stripe:'", "SOURCE:KEY"]),
        (["events", "list", "--limit", "0"], ["--limit", "at least 1"]),
        (["events", "list", "--since", "yesterday"], ["'yesterday'", "ISO 8601"]),
        (["events", "list", "--state", "done"], ["'done'", "processed"]),
        (["status", "--max-age", "soon"], ["'soon'", "90d"]),
        (["status", "--receiver-metrics", "http://[x"], ["'http://[x'", "http"]),
        (["prune", "--older-than", "a while"], ["'a while'", "90d"]),
        (["prune", "--older-than", "99999999999d"], ["'99999999999d'", "at most"]),
        (["events", "list", "--since", "999999d"], ["'999999d'", "year 1"]),
        (["events", "list", "--before", "1" + "0" * 20], ["too large", "at most"]),
        (["events", "show", "9" * 20], ["too large", "at most"]),
        (["replay", "abc", "--reason", "r"], ["'abc'", "whole number"]),
        (["replay", "1", "--reason", "r", "--rate", "fast"], ["'fast'", "per second"]),
        (["dead", "list", "--limit", "-3"], ["--limit", "at least 1"]),
        (["worker", "--app", "x:y", "--concurrency", "0"], ["--concurrency", "at least 1"]),
        (["serve", "--port", "99999"], ["'99999'", "65535"]),
        (["send", "stripe", "--url", "localhost:8000"], ["'localhost:8000'", "http"]),
        (["send", "stripe", "--file", "missing.bin"], ["missing.bin", "No such file"]),
        (["send", "stripe", "--timeout", "-1"], ["'-1'", "above 0"]),
        (["bogus"], ["'bogus'", "inbox --help"]),
        ([], ["COMMAND", "inbox --help"]),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(
    cli: Run, args: list[str], expected: list[str]
) -> None:
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""
    line = _one_error_line(err)
    for text in expected:
        assert text in line
    assert "--help" in line


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("INBOX_DATABASE_URL", "postgres//typo", ["INBOX_DATABASE_URL", "'postgres//typo'"]),
        ("INBOX_DATABASE__URL", "host=db bogus=1", ["INBOX_DATABASE__URL", "bogus"]),
        ("INBOX_DATABASE_URL", "postgresql://u:hunter2@db:port/x", ["port", "u:***@"]),
        ("INBOX_WORKER__BATCH_SIZE", "300", ["worker.batch_size", f"at most {MAX_BATCH_SIZE}"]),
        ("INBOX_SOURCES", "[{bad", ["INBOX_SOURCES", "not valid JSON"]),
        ("INBOX_CONFIG", ".", ["cannot read it", "Is a directory"]),
    ],
)
def test_a_bad_setting_names_the_variable_and_what_to_write(
    cli: Run, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: list[str]
) -> None:
    monkeypatch.setenv(variable, value)
    code, out, err = cli("status")
    assert (code, out) == (2, "")
    line = _one_error_line(err)
    for text in expected:
        assert text in line
    assert "hunter2" not in line  # a password is never printed
    assert not Path(".inbox").exists()  # no embedded server was started for it


def test_a_batch_size_over_the_cap_in_a_file_names_the_file_and_the_reason(
    cli: Run, tmp_path: Path
) -> None:
    config = tmp_path / "inbox.toml"
    config.write_text("[worker]\nbatch_size = 300\n", encoding="utf-8")
    code, _, err = cli("--config", str(config), "status")
    assert code == 2
    line = _one_error_line(err)
    assert str(config) in line
    assert "worker.batch_size = 300" in line
    assert "holds its rows' locks" in line


def test_a_settings_file_that_is_not_text_is_one_line(cli: Run, tmp_path: Path) -> None:
    config = tmp_path / "inbox.toml"
    config.write_bytes(b"\xff\xfe[worker]\n")
    code, _, err = cli("--config", str(config), "status")
    assert code == 2
    assert "not UTF-8" in _one_error_line(err)


def test_an_unset_secrets_env_names_the_variable_the_source_and_the_file(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SHOP_SECRETS", raising=False)
    config = tmp_path / "shop.toml"
    config.write_text(
        '[[sources]]\nname = "shop"\nverifier = "shopify"\nsecrets_env = "SHOP_SECRETS"\n',
        encoding="utf-8",
    )
    code, _, err = cli("--config", str(config), "send", "shop")
    assert code == 2
    line = _one_error_line(err)
    assert "environment variable SHOP_SECRETS is not set" in line
    assert "'shop'" in line
    assert str(config) in line
    assert "commas" in line  # how several secrets are written


def test_an_app_attribute_that_is_missing_is_named_with_the_routers_there(cli: Run) -> None:
    code, _, err = cli("worker", "--app", "tests.operator._app:nope")
    assert code == 2
    line = _one_error_line(err)
    assert "has no attribute 'nope'" in line
    assert "buggy, fixed" in line  # the Routers it does have
    assert "NoneType" not in line


def test_an_unknown_revision_is_one_line(
    cli: Run, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INBOX_DATABASE_URL", db_url)
    code, _, err = cli("db", "upgrade", "nope")
    assert code == 2
    assert "'nope'" in _one_error_line(err)


def test_an_unreachable_database_is_one_line(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    # Port 1 on the loopback: nothing listens there, the refusal is immediate.
    monkeypatch.setenv("INBOX_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/x")
    for args in (["status"], ["db", "current"], ["events", "show", "1"]):
        code, _, err = cli(*args)
        assert code == 2
        assert "database unavailable" in _one_error_line(err)


def test_the_installed_command_answers_in_one_line_too(db_url: str) -> None:
    """The issue's two cases, through the real ``inbox`` process."""
    typo = {**env_for(db_url), "INBOX_DATABASE_URL": "postgres//typo"}
    del typo["INBOX_DATABASE__URL"]  # the nested spelling would win over the typo
    for env, args, expected in [
        (env_for(db_url), ["events", "show", "foo"], "'foo'"),
        (typo, ["status"], "'postgres//typo'"),
    ]:
        done = inbox(db_url, *args, env=env)
        assert done.returncode == 2
        assert expected in _one_error_line(done.stderr)
