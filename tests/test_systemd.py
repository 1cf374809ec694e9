"""``sd_notify`` over a real Unix datagram socket, as systemd listens for it."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from inbox._core.runtime import systemd


@pytest.fixture
def notify_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = tmp_path / "notify"
    sock.bind(str(path))
    sock.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    with sock:
        yield sock


def test_without_systemd_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert systemd.notify("READY=1") is False


def test_a_reader_that_lags_never_holds_the_sender(notify_socket: socket.socket) -> None:
    sent = [systemd.notify("WATCHDOG=1") for _ in range(10_000)]  # never read: the queue fills
    assert sent[0] is True
    assert sent[-1] is False


def test_a_message_is_one_datagram_of_lines(notify_socket: socket.socket) -> None:
    assert systemd.notify("STOPPING=1", "STATUS=draining")
    assert notify_socket.recv(4096) == b"STOPPING=1\nSTATUS=draining"


def test_an_abstract_socket_is_named_with_an_at(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"pg-inbox-test-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert systemd.notify("READY=1")
        assert sock.recv(4096) == b"READY=1"


def test_a_socket_gone_is_logged_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "nobody"))
    assert systemd.notify("READY=1") is False


@pytest.mark.parametrize(
    ("usec", "pid", "interval"),
    [("", "", None), ("0", "", None), ("4000000", "", 2.0), ("4000000", "self", 2.0),
     ("4000000", "1", None)],
)  # fmt: skip
def test_the_watchdog_is_fed_at_half_its_interval_by_the_process_it_watches(
    monkeypatch: pytest.MonkeyPatch, usec: str, pid: str, interval: float | None
) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", usec)
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()) if pid == "self" else pid)
    assert systemd.watchdog_interval() == interval


def test_the_notifier_says_ready_once_and_feeds_the_watchdog_while_alive(
    notify_socket: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "200000")  # a ping every 0.1 s
    state = {"ready": False, "alive": True}
    notifier = systemd.Notifier(ready=lambda: state["ready"], alive=lambda: state["alive"])
    notifier.start()
    try:
        assert notify_socket.recv(64) == b"WATCHDOG=1"  # alive before it is ready
        state["ready"] = True
        messages = [notify_socket.recv(64) for _ in range(4)]
        assert messages.count(b"READY=1") == 1
        state["alive"] = False
        time.sleep(0.15)  # a ping already on its way may still come
        _drain(notify_socket)
        time.sleep(0.35)  # three intervals: a live notifier would have pinged
        assert _drain(notify_socket) == []
    finally:
        notifier.stop()
    assert messages[-1] == b"WATCHDOG=1"


def _drain(sock: socket.socket) -> list[bytes]:
    """The datagrams waiting on ``sock``."""
    sock.settimeout(0)
    got = []
    try:
        while True:
            got.append(sock.recv(64))
    except BlockingIOError:
        return got
    finally:
        sock.settimeout(5)
