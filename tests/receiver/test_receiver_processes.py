"""`inbox serve --workers N`: real processes on one port; a duplicate sent to two of them at
once is still one event; SIGTERM stops them all; a process that dies stops the rest."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inbox._core.config.settings import Settings
from tests._wait import wait_for
from tests.receiver.conftest import RsaPair, event_rows, signed
from tests.receiver.test_receiver_cli import wait_until_healthy, write_config

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="--workers needs fork()")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    """A notify socket as systemd binds one, which learns each sender's pid."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify"))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        yield sock


def _notifications(sock: socket.socket) -> list[tuple[int, str]]:
    """(sender's pid, message) of each datagram waiting on ``sock``."""
    sock.setblocking(False)
    got = []
    try:
        while True:
            data, ancillary, _flags, _address = sock.recvmsg(4096, socket.CMSG_SPACE(12))
            (pid, _uid, _gid) = struct.unpack("3i", ancillary[0][2][:12])
            got.append((pid, data.decode()))
    except BlockingIOError:
        return got


@pytest.fixture
def two_processes(
    tmp_path: Path,
    db_url: str,
    unused_tcp_port: int,
    rsa_pair: RsaPair,
    notify_socket: socket.socket,
) -> Iterator[tuple[int, subprocess.Popen[str], list[int]]]:
    config = write_config(tmp_path / "inbox.toml", db_url, unused_tcp_port, rsa_pair)
    serve = ["serve", "--workers", "2"]
    process = subprocess.Popen(
        [sys.executable, "-m", "inbox._cli.main", "--config", str(config), *serve],
        env={**os.environ, "NOTIFY_SOCKET": notify_socket.getsockname()},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{unused_tcp_port}/healthz", process)
        wait_for(lambda: len(_children(process.pid)) == 2, timeout=30, what="two processes")
        yield unused_tcp_port, process, _children(process.pid)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed while we looked
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _server_side_inode(server_port: int, client_port: int) -> str | None:
    """The inode of the accepted socket of the connection from ``client_port``."""
    local, remote = f"0100007F:{server_port:04X}", f"0100007F:{client_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[2] == remote:
            return fields[9]
    return None


def _connections_to_each(port: int, children: list[int]) -> dict[int, socket.socket]:
    """Open connections until each process has accepted one; one connection per process."""
    held: list[socket.socket] = []
    owned: dict[int, socket.socket] = {}
    try:
        for _ in range(200):
            sock = socket.create_connection(("127.0.0.1", port))
            held.append(sock)
            client_port = sock.getsockname()[1]
            # Accepted once the process answers on it: a request for /healthz proves it.
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            _read_reply(sock)
            inode = _server_side_inode(port, client_port)
            for child in children:
                if inode is not None and inode in _socket_inodes(child):
                    owned.setdefault(child, sock)
            if len(owned) == len(children):
                return owned
        raise AssertionError(f"200 connections never reached every process ({owned})")
    finally:
        for sock in held:
            if sock not in owned.values():
                sock.close()


def _read_reply(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split(b" ", 2)[1]), body


def test_a_duplicate_sent_to_two_processes_at_once_is_one_event(
    two_processes: tuple[int, subprocess.Popen[str], list[int]],
    make_settings: Callable[..., Settings],
    db_url: str,
) -> None:
    port, _process, children = two_processes
    settings = make_settings(db_url)
    request = signed(settings, "sw", url=f"http://127.0.0.1:{port}/webhooks/{{source}}")
    head = f"POST /webhooks/sw HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
    head += f"content-length: {len(request.body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in request.headers.items()) + "\r\n"
    wire = head.encode() + request.body

    connections = _connections_to_each(port, children)
    try:
        for sock in connections.values():  # both sent before either reply is read
            sock.sendall(wire)
        replies = [_read_reply(sock) for sock in connections.values()]
    finally:
        for sock in connections.values():
            sock.close()

    assert [status for status, _ in replies] == [200, 200]
    answers = [json.loads(body) for _, body in replies]
    assert sorted(a["status"] for a in answers) == ["accepted", "duplicate"]
    assert answers[0]["event_id"] == answers[1]["event_id"]
    [row] = event_rows(db_url)
    assert row[0] == answers[0]["event_id"]


def test_sigterm_stops_every_process_and_exits_zero(
    two_processes: tuple[int, subprocess.Popen[str], list[int]],
    notify_socket: socket.socket,
) -> None:
    _port, process, children = two_processes
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert err.count("receiver_stopped") == 2  # each process ran its lifespan's end
    assert not [pid for pid in children if _alive(pid)]
    # systemd hears from the main process alone (NotifyAccess=main), once each.
    assert _notifications(notify_socket) == [(process.pid, "READY=1"), (process.pid, "STOPPING=1")]


def test_a_process_that_dies_stops_the_others_and_the_command_fails(
    two_processes: tuple[int, subprocess.Popen[str], list[int]],
) -> None:
    _port, process, children = two_processes
    os.kill(children[0], signal.SIGKILL)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "receiver_process_died" in err
    assert not _alive(children[1])
