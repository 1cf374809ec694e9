"""`inbox serve` and `inbox send` as a user runs them: real processes on a loopback port."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from tests.receiver.conftest import RsaPair, event_rows, source_tables


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)  # JSON strings and numbers are valid TOML


def write_config(path: Path, db_url: str, port: int, rsa_pair: RsaPair) -> Path:
    lines = [
        "[database]",
        f"url = {json.dumps(db_url)}",
        "[receiver]",
        'host = "127.0.0.1"',
        f"port = {port}",
    ]
    for table in source_tables(rsa_pair):
        lines.append("[[sources]]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in table.items())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def inbox(*args: str, config: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inbox._cli.main", "--config", str(config), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=os.environ.copy(),
    )


def wait_until_healthy(url: str, process: subprocess.Popen[str], deadline_s: float = 30) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet; ask again (each try is itself the wait)
    raise AssertionError(f"{url} never became healthy")


@contextlib.contextmanager
def serving(
    config: Path,
    port: int,
    *,
    python: Sequence[str] = ("-m", "inbox._cli.main"),
    stderr: IO[str] | int = subprocess.PIPE,
) -> Iterator[subprocess.Popen[str]]:
    """`inbox serve` with ``config``, healthy on ``port``, until SIGTERM at the end; started
    as ``python`` says (what runs the command line), its log going to ``stderr``."""
    process = subprocess.Popen(
        [sys.executable, *python, "--config", str(config), "serve"],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}/healthz", process)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


@pytest.fixture
def served(
    tmp_path: Path, receiver_url: str, unused_tcp_port: int, rsa_pair: RsaPair
) -> Iterator[tuple[Path, int, subprocess.Popen[str]]]:
    config = write_config(tmp_path / "inbox.toml", receiver_url, unused_tcp_port, rsa_pair)
    with serving(config, unused_tcp_port) as process:
        yield config, unused_tcp_port, process


def test_send_signs_posts_and_prints_the_event_id(
    served: tuple[Path, int, subprocess.Popen[str]], db_url: str
) -> None:
    config, _port, _process = served
    sent = inbox("send", "sw", "--type", "invoice.paid", config=config)
    assert sent.returncode == 0, sent.stderr
    assert "HTTP 200" in sent.stdout
    [row] = event_rows(db_url)
    assert f"event id: {row[0]} (accepted)" in sent.stdout
    assert (row[1], row[3], row[4]) == ("sw", "invoice.paid", "standard-webhooks")


def test_send_works_for_every_configured_scheme(
    served: tuple[Path, int, subprocess.Popen[str]], db_url: str
) -> None:
    config, _port, _process = served
    sources = ["stripe", "github", "slack", "alipay", "wechatpay", "open"]
    for source in sources:
        sent = inbox("send", source, config=config)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "HTTP 200" in sent.stdout, source
    assert sorted(row[1] for row in event_rows(db_url)) == sorted(sources)


def test_send_a_file_and_a_rejection_is_reported(
    served: tuple[Path, int, subprocess.Popen[str]], db_url: str, tmp_path: Path
) -> None:
    config, port, _process = served
    payload = tmp_path / "event.json"
    payload.write_bytes(b'{"id": "evt_from_file", "type": "charge.refunded"}')
    sent = inbox("send", "stripe", "--file", str(payload), config=config)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    [row] = event_rows(db_url)
    assert (row[2], row[3], bytes(row[6])) == (
        "evt_from_file",
        "charge.refunded",
        payload.read_bytes(),
    )
    # too big for the `small` source: the 413 is printed and the exit status says so
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 100)
    refused = inbox("send", "small", "--file", str(big), config=config)
    assert refused.returncode == 1
    assert "HTTP 413" in refused.stdout
    other = f"http://127.0.0.1:{port}/webhooks/nope"
    assert "HTTP 404" in inbox("send", "sw", "--url", other, config=config).stdout


def test_serve_answers_unknown_paths_and_methods_and_serves_its_metrics(
    served: tuple[Path, int, subprocess.Popen[str]],
) -> None:
    # `inbox serve` serves the receiver's router without Starlette's application around it:
    # the router's own replies are what a client gets.
    _config, port, _process = served
    base = f"http://127.0.0.1:{port}"
    missing = httpx.get(f"{base}/nowhere", timeout=10)
    assert (missing.status_code, missing.text) == (404, "Not Found")
    wrong = httpx.get(f"{base}/webhooks/sw", timeout=10)
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST")
    metrics = httpx.get(f"{base}/metrics", timeout=10)
    assert metrics.status_code == 200
    assert "# TYPE inbox_receiver_requests_total counter" in metrics.text


def test_serve_warns_about_unverified_sources_and_exits_zero_on_sigterm(
    served: tuple[Path, int, subprocess.Popen[str]],
) -> None:
    _config, _port, process = served
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=30)
    # a clean stop is a success, not a death by the signal (uvicorn re-raises it)
    assert process.returncode == 0
    assert "receiver_stopped" in err  # the lifespan ran: the writer's pool was closed
    warnings = [
        json.loads(line) for line in err.splitlines() if "unverified_source_configured" in line
    ]
    assert [(w["source"], w["level"]) for w in warnings] == [("open", "warning")]


def test_send_to_an_unknown_source_is_an_error(tmp_path: Path, rsa_pair: RsaPair) -> None:
    config = write_config(tmp_path / "inbox.toml", "postgresql://unused", 1, rsa_pair)
    result = inbox("send", "nope", config=config)
    assert result.returncode == 2
    assert "unknown source 'nope'" in result.stderr


def test_send_when_nothing_listens_fails_cleanly(
    tmp_path: Path, rsa_pair: RsaPair, unused_tcp_port: int
) -> None:
    config = write_config(tmp_path / "inbox.toml", "postgresql://unused", unused_tcp_port, rsa_pair)
    result = inbox("send", "sw", config=config)
    assert result.returncode == 1
    assert "could not reach" in result.stderr
