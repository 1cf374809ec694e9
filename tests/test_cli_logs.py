"""Logs for people: readable on a terminal, JSON lines otherwise or when asked; operator
commands print their result and keep info-level log lines to themselves."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.operator._support import env_for, inbox
from tests.processors._support import write_events

REPO = Path(__file__).resolve().parent.parent


def _first_line_containing(fd: int, text: str, proc: subprocess.Popen[bytes]) -> str:
    """Read ``fd`` until a line contains ``text``; fail after 60 s or when ``proc`` exits."""
    buffered = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the pty's other side closed: the process is gone
                chunk = b""
            buffered += chunk
            for line in buffered.decode(errors="replace").splitlines():
                if text in line:
                    return line
            if not chunk and proc.poll() is not None:
                break
        elif proc.poll() is not None:
            break
    raise AssertionError(f"no log line with {text!r}; got {buffered[-2000:]!r}")


@pytest.mark.parametrize(
    ("terminal", "option", "expect_json"),
    [
        (True, [], False),  # a person at a terminal: readable lines
        (True, ["--log-format", "json"], True),
        (False, [], True),  # a pipe (a log collector): JSON lines
        (False, ["--log-format", "console"], False),
    ],
)
def test_the_worker_logs_for_whoever_reads_its_stderr(
    db_url: str, terminal: bool, option: list[str], expect_json: bool
) -> None:
    read_fd, write_fd = pty.openpty() if terminal else os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "inbox", *option, "worker", "--app", "tests.operator._app:fixed"],
        env={**env_for(db_url), "TERM": "xterm"},
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=write_fd,
    )
    os.close(write_fd)
    try:
        line = _first_line_containing(read_fd, "worker_started", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        os.close(read_fd)
    assert code == 0
    if expect_json:
        assert json.loads(line)["event"] == "worker_started"
    else:
        assert not line.lstrip().startswith("{")
        assert "worker_started" in line
        assert "concurrency=1" in line  # structlog's console renderer: key=value
        assert "\x1b[" not in line  # NO_COLOR is set (env_for): no colour even on a terminal


def test_operator_commands_print_their_result_and_no_info_log_lines(db_url: str) -> None:
    ids = write_events(db_url, 3)
    replayed = inbox(db_url, "replay", str(ids[0]), "--reason", "look")
    assert replayed.returncode == 0, replayed.stderr
    assert "replay run" in replayed.stdout
    assert replayed.stderr == ""
    for args in (
        ["status"],
        ["events", "list"],
        ["dead", "list"],
        ["prune", "--older-than", "90d"],
    ):
        done = inbox(db_url, *args)
        assert done.stdout, args
        assert done.stderr == "", (args, done.stderr)
