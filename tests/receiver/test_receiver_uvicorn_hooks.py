"""The receiver without its hook into uvicorn (inbox/_cli/uvicorn_hooks.py): each thing the
hook needs is checked at start-up; when one is missing, or INBOX_UVICORN_HOOKS=off, `inbox
serve` runs on uvicorn's h11 protocol and says so in one line, serving webhooks with the
limits uvicorn itself has. (The hook's own limits: tests/receiver/test_receiver_limits.py.)"""

from __future__ import annotations

import select
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httptools
import pytest
from structlog.testing import capture_logs
from uvicorn.protocols.http import httptools_impl
from uvicorn.server import ServerState

from inbox._cli import uvicorn_hooks
from inbox._cli.http_limits import _LimitedHttpToolsProtocol
from inbox._core.config.settings import ReceiverSettings
from tests.receiver.conftest import RsaPair
from tests.receiver.test_receiver_cli import serving
from tests.receiver.test_receiver_limits import (
    MAX_CONNECTIONS,
    _answer,
    _connect,
    _head,
    _status,
    limited_config,
)

Protocol = httptools_impl.HttpToolsProtocol


@pytest.fixture(autouse=True)
def hooks_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(uvicorn_hooks.HOOKS_ENV, raising=False)


def _options_and_log() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with capture_logs() as logs:
        options = uvicorn_hooks.http_options(ReceiverSettings(max_header_bytes=4096))
    return options, [e for e in logs if e["event"] == "uvicorn_hooks_off"]


def test_the_hook_fits_the_installed_uvicorn() -> None:
    assert uvicorn_hooks.missing() == []
    options, off = _options_and_log()
    assert issubclass(options["http"], _LimitedHttpToolsProtocol)
    assert options["http"].limits.max_header_bytes == 4096
    assert off == []


def _without_send_400(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(Protocol, "send_400_response")


def _data_received_with_another_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    def data_received(self: Any, chunk: bytes) -> None: ...

    monkeypatch.setattr(Protocol, "data_received", data_received)


def _on_message_begin_setting_no_url(monkeypatch: pytest.MonkeyPatch) -> None:
    def on_message_begin(self: Any) -> None:
        self.target = b""

    monkeypatch.setattr(Protocol, "on_message_begin", on_message_begin)
    monkeypatch.setattr(Protocol, "on_url", on_message_begin)


def _a_cycle_that_sets_no_disconnected(monkeypatch: pytest.MonkeyPatch) -> None:
    def __init__(self: Any, **kwargs: Any) -> None:
        self.response_complete = False
        self.message_event = kwargs["message_event"]

    monkeypatch.setattr(httptools_impl.RequestResponseCycle, "__init__", __init__)


def _a_server_state_with_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    def __init__(self: Any) -> None:
        self.connections = []

    monkeypatch.setattr(ServerState, "__init__", __init__)


def _callback_errors_that_are_no_parse_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(httptools, "HttpParserCallbackError", type("Other", (Exception,), {}))


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_without_send_400, "HttpToolsProtocol.send_400_response(msg)"),
        (_data_received_with_another_parameter, "HttpToolsProtocol.data_received(data)"),
        (_on_message_begin_setting_no_url, "HttpToolsProtocol.url"),
        (_a_cycle_that_sets_no_disconnected, "RequestResponseCycle.disconnected"),
        (_a_server_state_with_a_list, "ServerState().connections, a set"),
        (_callback_errors_that_are_no_parse_errors, "httptools.HttpParserCallbackError"),
    ],
)
def test_a_uvicorn_that_changed_gets_h11_and_one_line_naming_the_change(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[pytest.MonkeyPatch], None], named: str
) -> None:
    change(monkeypatch)
    assert any(m.startswith(named) for m in uvicorn_hooks.missing()), uvicorn_hooks.missing()
    options, [line] = _options_and_log()
    assert options == {"http": "h11", "h11_max_incomplete_event_size": 4096}
    [reason] = line["reasons"]
    assert reason.startswith("uvicorn "), reason
    assert named in reason, reason
    assert line["not_enforced"] == ["max_headers", "head_timeout_seconds", "body_timeout_seconds"]


def _a_check_that_cannot_read_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    def lacks() -> list[str]:
        raise ValueError("no signature found for builtin <built-in method data_received>")

    monkeypatch.setattr(uvicorn_hooks, "_lacks", lacks)


def _a_hook_that_does_not_build(monkeypatch: pytest.MonkeyPatch) -> None:
    def limited_protocol(limits: ReceiverSettings) -> type:
        raise AttributeError("type object 'HttpToolsProtocol' has no attribute 'data_received'")

    monkeypatch.setattr(uvicorn_hooks, "_limited_protocol", limited_protocol)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_a_check_that_cannot_read_uvicorn, "ValueError: no signature found"),
        (_a_hook_that_does_not_build, "AttributeError: type object 'HttpToolsProtocol'"),
    ],
)
def test_what_the_check_did_not_foresee_falls_back_too(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[pytest.MonkeyPatch], None], named: str
) -> None:
    change(monkeypatch)
    options, [line] = _options_and_log()
    assert options["http"] == "h11"
    [reason] = line["reasons"]
    assert named in reason, reason


def test_the_switch_turns_the_hook_off_without_asking_uvicorn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(uvicorn_hooks.HOOKS_ENV, "off")
    monkeypatch.setattr(uvicorn_hooks, "missing", lambda: pytest.fail("uvicorn was asked"))
    options, [line] = _options_and_log()
    assert options["http"] == "h11"
    assert line["reasons"] == ["turned off by INBOX_UVICORN_HOOKS"]


# `inbox serve` as a uvicorn whose private class changed would start it: the method the hook
# overrides to answer a refusal renamed before the command runs.
RENAMED = (
    "import sys; from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as P;"
    " P.send_error_response = P.send_400_response; del P.send_400_response;"
    " from inbox._cli.main import main; sys.exit(main())"
)


@pytest.fixture(params=["switched off", "renamed"])
def served_without_the_hook(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    receiver_url: str,
    unused_tcp_port: int,
    rsa_pair: RsaPair,
) -> Iterator[tuple[int, Path]]:
    """`inbox serve` without the hook, on the port it yields, its log in the file it yields
    (read it after the requests: the process is still running)."""
    python: tuple[str, ...] = ("-m", "inbox._cli.main")
    if request.param == "switched off":
        monkeypatch.setenv(uvicorn_hooks.HOOKS_ENV, "off")
    else:
        python = ("-c", RENAMED)
    config = limited_config(tmp_path / "inbox.toml", receiver_url, unused_tcp_port, rsa_pair)
    log = tmp_path / "serve.log"
    with log.open("w") as stderr, serving(config, unused_tcp_port, python=python, stderr=stderr):
        yield unused_tcp_port, log


def _send_a_50_mb_head(port: int) -> tuple[int, bytes]:
    """How much of an endless head the server took before it cut the connection, and what it
    answered (nothing, when the reset came first)."""
    sent, answer = 0, b""
    with _connect(port) as sock:
        sock.sendall(b"POST /webhooks/open HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sock.setblocking(False)
        chunk = b"a" * 65536
        while sent < 50 * 1024 * 1024:
            readable, writable, _ = select.select([sock], [sock], [], 5)
            try:
                if readable:
                    data = sock.recv(65536)
                    answer += data
                    if not data:
                        break
                elif writable:
                    sent += sock.send(chunk)
                else:
                    break  # neither: the server stopped reading and did not close
            except (BrokenPipeError, ConnectionResetError):
                break
    return sent, answer


def test_without_the_hook_inbox_serve_runs_on_h11_with_uvicorn_s_own_limits(
    served_without_the_hook: tuple[int, Path],
) -> None:
    port, log = served_without_the_hook
    with _connect(port) as sock:
        sock.sendall(_head("Idempotency-Key: k1") + b"{}")
        assert _status(_answer(sock)) == 200

    # max_header_bytes: h11's bound on an unfinished head, answered 400, not 431.
    sent, answer = _send_a_50_mb_head(port)
    assert sent < 8 * 1024 * 1024, sent
    assert answer == b"" or _status(answer) == 400, answer[:200]

    # max_connections: uvicorn's limit_concurrency.
    held = [_connect(port) for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in held:
            sock.sendall(b"POST /webhooks/open HTTP/1.1\r\n")
        with _connect(port) as sock:
            sock.sendall(_head("Idempotency-Key: crowded") + b"{}")
            assert _status(_answer(sock)) == 503
    finally:
        for sock in held:
            sock.close()

    [line] = [text for text in log.read_text().splitlines() if "uvicorn_hooks_off" in text]
    assert "h11" in line
    assert "head_timeout_seconds" in line
    assert "send_400_response" in line or "INBOX_UVICORN_HOOKS" in line
