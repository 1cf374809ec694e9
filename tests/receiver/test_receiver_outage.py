"""`inbox serve` while its database is unreachable: 503s, one warning per interval naming the
server and the fix, a prompt health check, and a clean exit on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from inbox._core.database.outage import Outage, describe_server
from tests._commands import start_serve, status_of
from tests._wait import wait_for


def test_an_outage_warns_once_per_interval_and_says_when_it_ended() -> None:
    outage = Outage(interval=30)
    assert outage.recovered(0.0) is None  # nothing was down
    assert outage.failed(100.0) is True
    assert outage.failed(100.5) is False
    assert outage.failed(129.9) is False
    assert outage.failed(130.0) is True
    assert outage.recovered(131.0) == 31.0
    assert outage.failed(200.0) is True  # a new outage warns at once


def test_the_server_is_named_without_its_credentials() -> None:
    assert describe_server("postgresql://u:secret@db.example:6432/inbox") == "db.example:6432/inbox"
    assert describe_server("host=/run/pg dbname=x password=p") == "/run/pg:5432/x"
    assert describe_server("not a conninfo = = =") == "the configured database"


@pytest.mark.parametrize(
    ("conninfo", "described"),
    [
        (
            "postgresql://u:pw@h1:7001,h2:7002/db?target_session_attrs=read-write",
            "h1:7001,h2:7002/db",
        ),
        (
            "host=127.0.0.1,127.0.0.1 port=7001,7002 dbname=pginbox password=pw"
            " target_session_attrs=read-write",
            "127.0.0.1:7001,127.0.0.1:7002/pginbox",
        ),
        ("host=h1,h2 port=6432 dbname=db", "h1:6432,h2:6432/db"),  # one port serves all
        ("postgresql://u:pw@h1,h2:7002/db", "h1:5432,h2:7002/db"),  # empty: the default
        ("postgresql://u:pw@[::1]:7001,h2/db", "[::1]:7001,h2:5432/db"),
        ("hostaddr=10.0.0.1,10.0.0.2 port=7001,7002 user=u", "10.0.0.1:7001,10.0.0.2:7002/u"),
        ("host=h1,h2,h3 port=1,2 dbname=db", "h1,h2,h3:1,2/db"),  # unpaired: as written
    ],
)
def test_a_multi_host_string_names_each_server_with_its_port(conninfo: str, described: str) -> None:
    assert describe_server(conninfo) == described
    assert "pw" not in describe_server(conninfo)


def test_serve_with_an_unreachable_database(tmp_path: Path, unused_tcp_port: int) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]  # bound, never listening: connections are refused
        config = tmp_path / "inbox.toml"
        config.write_text(
            "[database]\n"
            f'url = "postgresql://inbox:s3cret@127.0.0.1:{dead_port}/inbox"\n'
            "[receiver]\n"
            f"port = {unused_tcp_port}\n"
            "write_timeout_seconds = 2.0\n"
            '[[sources]]\nname = "open"\nverifier = "none"\nkey_from = "body-sha256"\n',
            encoding="utf-8",
        )
        process = start_serve(config)
        base = f"http://127.0.0.1:{unused_tcp_port}"

        def healthz() -> int:
            return status_of("GET", base + "/healthz")

        try:
            wait_for(lambda: healthz() == 503, timeout=60, what="the receiver to answer 503")
            reply = httpx.post(base + "/webhooks/open", content=b'{"a": 1}', timeout=10)
            assert reply.status_code == 503
            started = time.monotonic()
            for _ in range(5):
                assert healthz() == 503
            # Known down: no call waits for the pool (2 s each, 10 s for the five; half of
            # that leaves room for a loaded machine).
            assert time.monotonic() - started < 5.0
        finally:
            process.send_signal(signal.SIGTERM)
            _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    [warning] = [line for line in lines if line["event"] == "database_unavailable"]
    assert warning["server"] == f"127.0.0.1:{dead_port}/inbox"
    assert "refused" in warning["error"]
    assert "Connection refused" in warning["error"]
    assert "[database] url" in warning["fix"]
    assert "s3cret" not in err
    assert "error connecting" not in err  # the pool's own line per attempt is not shown
    assert len([line for line in lines if line["event"] == "health_check_failed"]) == 1
