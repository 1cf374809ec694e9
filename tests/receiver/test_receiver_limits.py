"""What one client may hold of `inbox serve` (real processes, raw sockets): a head's size and
fields (431), the time to send a head or a body (408), the connections at once (503); an
attacker's unfinished 50 MB header costs the server no memory, and a client that keeps to
the limits is served as before."""

from __future__ import annotations

import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.receiver.conftest import RsaPair, count_events
from tests.receiver.test_receiver_cli import serving, write_config

HEAD_SECONDS = 1.0
BODY_SECONDS = 1.0
MAX_CONNECTIONS = 20
# A deadline is checked every tenth of the shortest timeout; then the answer travels.
LATE = 1.5


def limited_config(path: Path, receiver_url: str, port: int, rsa_pair: RsaPair) -> Path:
    """The receiver's config with the short clocks and few connections of these tests."""
    config = write_config(path, receiver_url, port, rsa_pair)
    text = config.read_text().replace(
        "[receiver]\n",
        f"[receiver]\nhead_timeout_seconds = {HEAD_SECONDS}\n"
        f"body_timeout_seconds = {BODY_SECONDS}\nmax_connections = {MAX_CONNECTIONS}\n",
    )
    config.write_text(text)
    return config


@pytest.fixture
def serve(
    tmp_path: Path, receiver_url: str, unused_tcp_port: int, rsa_pair: RsaPair
) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    config = limited_config(tmp_path / "inbox.toml", receiver_url, unused_tcp_port, rsa_pair)
    with serving(config, unused_tcp_port) as process:
        yield unused_tcp_port, process


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _head(*headers: str, length: int = 2) -> bytes:
    lines = [
        "POST /webhooks/open HTTP/1.1",
        "Host: 127.0.0.1",
        f"Content-Length: {length}",
        *headers,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _answer(sock: socket.socket, timeout: float = 10) -> bytes:
    """What the server sends until it closes the connection or a whole answer is in."""
    sock.settimeout(timeout)
    got = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return got
        if not chunk:
            return got
        got += chunk
        head, sep, body = got.partition(b"\r\n\r\n")
        if sep:
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            if len(body) >= length:
                return got


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1])


def _closed(sock: socket.socket, timeout: float) -> bool:
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        pass
    return True


def test_a_one_megabyte_header_gets_431(
    serve: tuple[int, subprocess.Popen[str]], db_url: str
) -> None:
    port, _ = serve
    with _connect(port) as sock:
        sock.sendall(_head("X-Big: " + "a" * 1024 * 1024) + b"{}")
        answer = _answer(sock)
    assert _status(answer) == 431
    assert b"connection: close" in answer.lower()
    assert count_events(db_url) == 0


@pytest.mark.parametrize("fields", [101, 10_000])
def test_too_many_header_fields_get_431(
    serve: tuple[int, subprocess.Popen[str]], fields: int
) -> None:
    port, _ = serve
    with _connect(port) as sock:
        sock.sendall(_head(*(f"X-{n}: 1" for n in range(fields))) + b"{}")
        assert _status(_answer(sock)) == 431


def test_a_head_within_the_limits_is_served(serve: tuple[int, subprocess.Popen[str]]) -> None:
    port, _ = serve
    with _connect(port) as sock:
        fields = [f"X-{n}: {'v' * 200}" for n in range(90)]  # 90 fields, ~19 KB
        sock.sendall(_head("Idempotency-Key: k1", *fields) + b"{}")
        assert _status(_answer(sock)) == 200


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_unfinished_50_mb_heads_are_cut_off_and_cost_no_memory(
    serve: tuple[int, subprocess.Popen[str]],
) -> None:
    port, process = serve
    before = _rss_kib(process.pid)
    chunk = b"a" * 65536
    socks = [_connect(port) for _ in range(4)]
    sent = [0] * 4
    answers = [b""] * 4
    try:
        for sock in socks:
            sock.sendall(b"POST /webhooks/open HTTP/1.1\r\nHost: x\r\nX-Big: ")
            sock.setblocking(False)
        open_ = set(range(4))
        while open_ and min(sent[i] for i in open_) < 50 * 1024 * 1024:
            for i in list(open_):
                readable, writable, _ = select.select([socks[i]], [socks[i]], [], 1)
                try:
                    if readable:
                        data = socks[i].recv(65536)
                        answers[i] += data
                        if not data or b"\r\n\r\n" in answers[i]:
                            open_.discard(i)
                            continue
                    if writable:
                        sent[i] += socks[i].send(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    open_.discard(i)
        after = _rss_kib(process.pid)
    finally:
        for sock in socks:
            sock.close()
    assert all(_status(a) == 431 for a in answers), answers
    assert max(sent) < 8 * 1024 * 1024, sent  # cut off long before 50 MB
    assert after - before < 16 * 1024, (before, after)


def test_a_head_trickled_a_byte_at_a_time_gets_408(
    serve: tuple[int, subprocess.Popen[str]],
) -> None:
    port, _ = serve
    socks = [_connect(port) for _ in range(MAX_CONNECTIONS - 2)]
    started = time.monotonic()
    for sock in socks:
        sock.sendall(b"POST /webhooks/open HTTP/1.1\r\n")
        sock.setblocking(False)
    answers = dict.fromkeys(socks, b"")
    open_ = set(socks)
    try:
        while open_ and time.monotonic() - started < HEAD_SECONDS + LATE + 2:
            for sock in list(open_):
                try:
                    sock.send(b"X")  # a byte at a time, never a whole field
                    while data := sock.recv(65536):
                        answers[sock] += data
                    open_.discard(sock)  # closed
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    open_.discard(sock)
            time.sleep(0.1)
        took = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
    assert not open_, f"{len(open_)} connections still open after {took:.1f} s"
    assert took < HEAD_SECONDS + LATE, took
    assert all(_status(a) == 408 for a in answers.values()), set(answers.values())


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(
    serve: tuple[int, subprocess.Popen[str]],
) -> None:
    port, _ = serve
    with _connect(port) as sock:
        started = time.monotonic()
        sock.settimeout(HEAD_SECONDS + LATE + 2)
        assert sock.recv(65536) == b""
        assert time.monotonic() - started < HEAD_SECONDS + LATE


def test_a_body_not_received_in_time_gets_408(
    serve: tuple[int, subprocess.Popen[str]], db_url: str
) -> None:
    port, _ = serve
    with _connect(port) as sock:
        sock.sendall(_head("Idempotency-Key: slow", length=100) + b'{"a": 1')
        started = time.monotonic()
        answer = _answer(sock, timeout=BODY_SECONDS + LATE + 2)
        took = time.monotonic() - started
    assert _status(answer) == 408
    assert took < BODY_SECONDS + LATE, took
    assert count_events(db_url) == 0


def test_past_max_connections_a_request_gets_503(
    serve: tuple[int, subprocess.Popen[str]],
) -> None:
    port, _ = serve
    held = [_connect(port) for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in held:
            sock.sendall(b"POST /webhooks/open HTTP/1.1\r\n")  # a head begun, not finished
        with _connect(port) as sock:
            sock.sendall(_head("Idempotency-Key: crowded") + b"{}")
            answer = _answer(sock)
        assert _status(answer) == 503
    finally:
        for sock in held:
            sock.close()


def test_a_kept_alive_connection_gets_a_fresh_clock_for_each_request(
    serve: tuple[int, subprocess.Popen[str]],
) -> None:
    port, _ = serve
    with _connect(port) as sock:
        for n in range(3):
            sock.sendall(_head(f"Idempotency-Key: kept-{n}") + b"{}")
            assert _status(_answer(sock)) == 200
            time.sleep(HEAD_SECONDS * 1.5)  # idle longer than a head may take; kept alive
