"""PostgreSQL crashes and comes back: `inbox serve` and `inbox worker`, real processes, are
back at work within a second of the server accepting connections again.

Before, the receiver's pool reconnected on psycopg_pool's default backoff (1, 2, 4 ... s) and
handed out the connections the restart had killed, so it answered 503 for seconds after the
server was back; the workers' backoff grew to 5 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from inbox import InboxWriter
from tests._pg import RestartablePostgres, restartable_database
from tests._wait import scalar, wait_for
from tests.processors._procs import REPO, WorkerProcess
from tests.processors._support import create_business_table

pytestmark = pytest.mark.slow

# How long the server stays down: long enough for the old backoffs to have grown to seconds
# (the pool's third attempt came 4 s after its second). The outage under test, not a wait
# for anything: nothing marks "the backoff has grown".
DOWN_SECONDS = 3.0
# The bound of the issue: back within this long of the server accepting connections.
BACK_WITHIN_SECONDS = 1.0


# A source the tests can post to without signing: its key and type are read from the body.
UNSIGNED = {"name": "shop", "verifier": "none", "key_from": "json:/id", "type_from": "json:/type"}


def serve_config(path: Path, url: str, port: int, source: Mapping[str, object] = UNSIGNED) -> Path:
    """An ``inbox serve`` settings file: the database, a loopback port, one source."""
    path.write_text(
        "\n".join(
            [
                "[database]",
                f"url = {json.dumps(url)}",
                "[receiver]",
                'host = "127.0.0.1"',
                f"port = {port}",
                "write_timeout_seconds = 2.0",
                "[[sources]]",
                *(f"{key} = {json.dumps(value)}" for key, value in source.items()),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


class Served:
    def __init__(self, config: Path, port: int, log: Path) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self._log = log.open("w")
        self.log_path = log
        self.process = subprocess.Popen(
            [sys.executable, "-m", "inbox", "--config", str(config), "serve"],
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def status(self, path: str = "/healthz", **kwargs: object) -> int:
        try:
            return httpx.request(
                "POST" if kwargs else "GET", self.base + path, timeout=5, **kwargs
            ).status_code  # type: ignore[arg-type]
        except httpx.TransportError:
            return 0  # not listening (yet)

    def post(self, n: int) -> int:
        body = json.dumps({"id": f"order-{n}", "type": "order.paid", "n": n})
        return self.status("/webhooks/shop", content=body.encode())

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._log.close()


@pytest.fixture
def restartable(server_dir: Path) -> Iterator[tuple[RestartablePostgres, str]]:
    with restartable_database(server_dir, "restarty") as (server, url):
        create_business_table(url)
        yield server, url


def _paid(url: str) -> int:
    return int(scalar(url, "select count(*) from payments"))


@pytest.mark.parametrize("during", ["quiet", "busy"])
def test_receiver_and_worker_are_back_within_a_second_of_a_restart(
    restartable: tuple[RestartablePostgres, str],
    tmp_path: Path,
    unused_tcp_port: int,
    during: str,
) -> None:
    server, url = restartable
    served = Served(
        serve_config(tmp_path / "inbox.toml", url, unused_tcp_port),
        unused_tcp_port,
        tmp_path / "serve.log",
    )
    worker = WorkerProcess(url, tmp_path, 0)
    try:
        wait_for(lambda: served.status() == 200, timeout=60, what="the receiver healthy")
        # Several at once, so the pool holds several connections for the crash to kill.
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(served.post, range(8))) == [200] * 8
        wait_for(lambda: _paid(url) == 8, timeout=60, what="the first orders processed")

        server.crash()
        went_down = time.monotonic()
        if during == "busy":
            # Requests during the outage: 503, never a 2xx, and the health check says so.
            assert served.post(100) == 503
            assert served.status() == 503
        time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - went_down)))
        if during == "busy":
            started = time.monotonic()
            assert served.status() == 503
            # The outage is known: the health check does not wait for the pool's timeout.
            assert time.monotonic() - started < 0.5

        server.restart()  # returns once the server accepts connections
        accepting = time.monotonic()
        with InboxWriter(url, notify="off") as writer:
            writer.write("shop", "written-after", b'{"n": 1000}', event_type="order.paid")
        if during == "quiet":
            # Nothing used the pool while the server was down: its connections died
            # unseen, and the first request after the restart must not be handed one.
            assert served.post(200) == 200, served.output()
        wait_for(lambda: served.post(200) == 200, timeout=30, what="a 200 from the receiver")
        receiver_back = time.monotonic() - accepting
        wait_for(lambda: _paid(url) >= 10, timeout=30, what="the worker processing again")
        worker_back = time.monotonic() - accepting

        print(f"{during}: receiver back after {receiver_back:.3f} s, worker {worker_back:.3f} s")
        assert receiver_back <= BACK_WITHIN_SECONDS, served.output()
        assert worker_back <= BACK_WITHIN_SECONDS, worker.output()
        assert served.status() == 200
        assert worker.alive(), worker.output()
        assert worker.terminate() == 0, worker.output()
        served.process.terminate()
        assert served.process.wait(timeout=30) == 0, served.output()
        log = served.output()
        if during == "busy":
            # Told once, with the server and the fix; not once per reconnection attempt.
            events = [json.loads(line)["event"] for line in log.splitlines() if line[:1] == "{"]
            assert events.count("database_unavailable") == 1, log
            assert events.count("database_available") == 1, log
            assert "error connecting" not in log
    finally:
        worker.close()
        served.close()
