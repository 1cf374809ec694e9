"""docs/deploy.md's systemd units and Kubernetes manifests, and the probes they rely on.

The units' command lines run as real processes against a PostgreSQL of the test's own, with
a notify socket as systemd gives one, while the server is down, comes up, crashes and comes
back; then a worker is stopped mid-batch. Only what cannot run here is replaced: the
executable (this interpreter's ``-m inbox``), the config file, the app, and the host and
ports (loopback, picked free).
"""

from __future__ import annotations

import configparser
import contextlib
import itertools
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from inbox._cli.main import build_parser
from inbox._core.config.settings import WorkerSettings
from tests._pg import RestartablePostgres, restartable_database
from tests._wait import scalar, wait_for
from tests.processors._support import create_business_table
from tests.receiver.test_receiver_restart import Served, serve_config

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "docs" / "deploy.md"
APP = "tests.processors.fault_app:router"
# A worker's drain after SIGTERM: its batches' grace (handler_timeout_seconds + 5 s,
# processors._worker.worker) and recording its stop (up to 5 s).
DRAIN_EXTRA_SECONDS = 10.0
# The handler of the event a worker is stopped during: long enough to watch it drain.
HANDLER_MS = 3000


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DEPLOY.read_text(), re.M | re.S)


def unit(name: str) -> configparser.ConfigParser:
    """The unit docs/deploy.md shows as ``/etc/systemd/system/{name}``."""
    for block in _blocks("ini"):
        if block.startswith(f"# /etc/systemd/system/{name}\n"):
            parser = configparser.ConfigParser(interpolation=None, strict=True)
            parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
            parser.read_string(block)
            return parser
    raise AssertionError(f"docs/deploy.md shows no unit {name}")


def manifests() -> dict[str, dict[str, Any]]:
    """docs/deploy.md's Deployments by name."""
    found = {}
    for block in _blocks("yaml"):
        for doc in yaml.safe_load_all(block):
            if doc and doc.get("kind") == "Deployment":
                found[doc["metadata"]["name"]] = doc
    return found


def seconds(value: str) -> float:
    """A systemd time span as the units write them (``30``, ``30s``, ``2min``)."""
    match = re.fullmatch(r"(\d+)\s*(s|sec|min)?", value.strip())
    assert match, value
    return int(match[1]) * (60 if match[2] == "min" else 1)


def test_the_units_are_notify_units_with_a_watchdog_and_room_for_the_drain() -> None:
    drain = WorkerSettings().handler_timeout_seconds + DRAIN_EXTRA_SECONDS
    for name in ("inbox-receiver.service", "inbox-worker.service"):
        service = unit(name)["Service"]
        assert service["Type"] == "notify"
        assert seconds(service["WatchdogSec"]) > 0
        assert service["Restart"] == "always"
        command = shlex.split(service["ExecStart"])
        assert command[0].endswith("/inbox")
        build_parser().parse_args(command[1:])  # every flag is one the CLI has
    assert seconds(unit("inbox-worker.service")["Service"]["TimeoutStopSec"]) > drain


def test_the_manifests_probe_the_daemons_paths_and_wait_for_the_drain() -> None:
    deployments = manifests()
    drain = WorkerSettings().handler_timeout_seconds + DRAIN_EXTRA_SECONDS
    for name in ("inbox-receiver", "inbox-worker"):
        spec = deployments[name]["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        args = container["args"]
        assert args[0] == "inbox"
        build_parser().parse_args(args[1:])
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
            assert container[probe]["httpGet"]["path"] == path
            port = ports[container[probe]["httpGet"]["port"]]
            assert str(port) in args  # the port the daemon listens on
        if name == "inbox-worker":
            assert spec["terminationGracePeriodSeconds"] > drain
            # The probes must be reachable from the kubelet, not only from the pod.
            assert args[args.index("--metrics-host") + 1] == "0.0.0.0"  # noqa: S104


# -- the units' command lines, run ----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def command_of(name: str, config: Path, port: int) -> list[str]:
    """The unit's ExecStart with the executable, config, app, host and port made local."""
    replace = {
        "--config": str(config),
        "--app": APP,
        "--host": "127.0.0.1",
        "--port": str(port),
        "--metrics-port": str(port),
    }
    words = shlex.split(unit(name)["Service"]["ExecStart"])
    command = [sys.executable, "-m", "inbox"]
    for before, word in itertools.pairwise(words):
        command.append(replace.get(before, word))
    if "--metrics-host" not in command and name == "inbox-worker.service":
        command += ["--metrics-host", "127.0.0.1"]
    return command


class Notifications:
    """A notify socket as systemd binds one, read as systemd reads it (at once, always)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(path))
        self.received: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError):  # closed: the test is over
            while data := self._sock.recv(4096):
                self.received += [(time.monotonic(), line) for line in data.decode().split("\n")]

    def lines(self, since: float = 0.0) -> list[str]:
        return [line for at, line in list(self.received) if at >= since]

    def close(self) -> None:
        self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._reader.join(timeout=5)


class Daemon(Served):
    """A unit's command line in a child process, under a notify socket of its own (its log
    and its end as ``inbox serve``'s in the restart tests)."""

    def __init__(self, name: str, config: Path, tmp: Path, env: dict[str, str]) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.notes = Notifications(tmp / f"{name}.notify")
        self.log_path = tmp / f"{name}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            command_of(name, config, self.port),
            cwd=REPO,
            env={
                **os.environ,
                "NOTIFY_SOCKET": str(self.notes.path),
                "WATCHDOG_USEC": "1000000",  # a ping every 0.5 s, to see them in the test
                **env,
            },
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def probe(self, path: str) -> tuple[int, dict[str, Any]]:
        try:
            response = httpx.get(self.base + path, timeout=10)
        except httpx.TransportError:
            return 0, {}  # not listening (yet)
        return response.status_code, response.json()

    def ready(self) -> bool:
        assert self.process.poll() is None, self.output()
        return self.probe("/readyz")[0] == 200

    def close(self) -> None:
        super().close()
        self.notes.close()


@pytest.fixture
def down_database(server_dir: Path) -> Iterator[tuple[RestartablePostgres, str]]:
    """A migrated database on a server of the test's own, stopped."""
    with restartable_database(server_dir, "probes") as (server, url):
        create_business_table(url)
        server.crash()
        yield server, url


@pytest.fixture
def daemons(
    down_database: tuple[RestartablePostgres, str], tmp_path: Path
) -> Iterator[tuple[Daemon, Daemon]]:
    _server, url = down_database
    config = serve_config(tmp_path / "inbox.toml", url, 0)
    env = {
        "INBOX_WORKER__POLL_INTERVAL_SECONDS": "0.5",
        "FAULT_HANDLER_SLEEP_MS": str(HANDLER_MS),
    }
    receiver = Daemon("inbox-receiver.service", config, tmp_path, env)
    worker = Daemon("inbox-worker.service", config, tmp_path, env)
    try:
        yield receiver, worker
    finally:
        receiver.close()
        worker.close()


def _status(daemon: Daemon, path: str) -> str | None:
    return daemon.probe(path)[1].get("status")


@pytest.mark.slow
def test_the_units_processes_are_ready_with_the_database_and_alive_without_it(
    down_database: tuple[RestartablePostgres, str], daemons: tuple[Daemon, Daemon]
) -> None:
    server, url = down_database
    receiver, worker = daemons
    both = (receiver, worker)

    # Started with the database down: alive (and feeding the watchdog), not ready.
    for daemon in both:
        wait_for(lambda d=daemon: d.probe("/livez")[0] == 200, timeout=60, what="alive")
        assert daemon.probe("/readyz")[0] == 503, daemon.output()
        assert _status(daemon, "/readyz") == "starting"
        wait_for(lambda d=daemon: "WATCHDOG=1" in d.notes.lines(), timeout=10, what="a ping")
        assert "READY=1" not in daemon.notes.lines()

    server.restart()
    for daemon in both:
        wait_for(daemon.ready, timeout=60, what="ready once the database is up")
        wait_for(lambda d=daemon: "READY=1" in d.notes.lines(), timeout=5, what="READY=1")
        assert daemon.notes.lines().count("READY=1") == 1

    # An outage: readiness fails, liveness holds, the watchdog is still fed.
    server.crash()
    down = time.monotonic()
    for daemon in both:
        wait_for(lambda d=daemon: not d.ready(), timeout=30, what="not ready while down")
    assert _status(worker, "/readyz") == "unavailable"
    while time.monotonic() - down < 3.0:
        for daemon in both:
            assert daemon.probe("/livez")[0] == 200, daemon.output()
        time.sleep(0.2)
    for daemon in both:
        assert "WATCHDOG=1" in daemon.notes.lines(since=down + 1.0), daemon.output()

    server.restart()
    for daemon in both:
        wait_for(daemon.ready, timeout=60, what="ready again once the database is back")
        assert daemon.probe("/livez")[0] == 200

    # Stopped mid-batch, the worker is not ready at once, and finishes its batch.
    body = json.dumps({"id": "order-1", "type": "order.paid", "n": 1}).encode()
    assert httpx.post(f"{receiver.base}/webhooks/shop", content=body, timeout=10).status_code == 200
    wait_for(
        lambda: scalar(url, "select count(*) from inbox_claims") > 0,
        timeout=30,
        what="the worker to hold the event",
    )
    worker.process.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    wait_for(lambda: _status(worker, "/readyz") == "draining", timeout=2, what="draining")
    assert worker.process.poll() is None  # still finishing its batch
    assert worker.probe("/livez")[0] == 200
    assert time.monotonic() - stopped < HANDLER_MS / 1000
    assert "STOPPING=1" in worker.notes.lines()
    assert worker.process.wait(timeout=60) == 0, worker.output()
    assert scalar(url, "select count(*) from payments") == 1  # the batch committed

    receiver.process.send_signal(signal.SIGTERM)
    assert receiver.process.wait(timeout=30) == 0, receiver.output()
    assert "STOPPING=1" in receiver.notes.lines()
