"""A primary fails over to its streaming standby under load: `inbox serve` and `inbox worker`,
real processes on a multi-host URL with ``target_session_attrs=read-write``, follow the
promoted standby without a restart.

Signed deliveries arrive at a steady rate before, during and after the switch. Every one
answered 2xx is stored once and handled once; the 503s of the promotion window are retried
as a provider would, and a retry meets a write that committed late as a duplicate.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from inbox import Settings
from inbox._core.config.settings import SourceSettings
from inbox._core.database.outage import describe_server
from inbox._receiving.samples import SampleRequest, build_sample
from tests._commands import environment, run_inbox
from tests._standby import StreamingPair, streaming_pair
from tests._wait import rows, scalar, wait_for
from tests.processors._procs import WorkerProcess
from tests.receiver.conftest import SW_SECRET
from tests.receiver.test_receiver_restart import Served, serve_config

pytestmark = pytest.mark.slow

RATE_PER_SECOND = 80
# Load before the primary stops and after the standby is promoted, in seconds of deliveries.
BEFORE_SECONDS = 3.0
AFTER_SECONDS = 3.0
# The bound of the issue: receiver and worker back at work within this long of the promotion.
BACK_WITHIN_SECONDS = 5.0
DATABASE = "inbox_failover"
SOURCE = {"name": "shop", "verifier": "standard-webhooks", "secrets": [SW_SECRET]}


@dataclass
class Delivery:
    request: SampleRequest
    sent: float
    answered: float | None = None
    status: int | None = None  # 0: no HTTP answer at all


class SteadyLoad:
    """Signed deliveries posted at a steady rate, from an event loop in a thread of its own,
    each answer recorded with its time."""

    def __init__(self, base_url: str, source: SourceSettings) -> None:
        self._url = f"{base_url}/webhooks/{source.name}"
        self._source = source
        self.deliveries: list[Delivery] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Send no more and wait for every answer."""
        self._stopping.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive(), "deliveries still unanswered after 120 s"

    def accepted_since(self, moment: float) -> list[Delivery]:
        """The deliveries sent at or after ``moment`` (monotonic) and answered 2xx so far."""
        return [d for d in list(self.deliveries) if d.sent >= moment and ok(d.status)]

    async def _run(self) -> None:
        # A connection per delivery, as many providers send them: the hundreds of requests
        # held open by the promotion window would otherwise stay in the client's pool as
        # idle keep-alive connections, slowing the client and meeting the server's close.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        async with (
            httpx.AsyncClient(timeout=60, limits=limits) as client,
            asyncio.TaskGroup() as tasks,
        ):
            started = time.monotonic()
            n = 0
            while not self._stopping.is_set():
                request = build_sample(
                    self._source,
                    url=self._url,
                    now=time.time(),
                    body=json.dumps({"type": "order.paid", "n": n}).encode(),
                    msg_id=f"msg_failover_{n}",
                )
                delivery = Delivery(request, sent=time.monotonic())
                self.deliveries.append(delivery)
                tasks.create_task(self._send(client, delivery))
                n += 1
                # The pace of the load, not a wait for anything.
                await asyncio.sleep(max(0.0, started + n / RATE_PER_SECOND - time.monotonic()))

    async def _send(self, client: httpx.AsyncClient, delivery: Delivery) -> None:
        request = delivery.request
        try:
            reply = await client.post(request.url, content=request.body, headers=request.headers)
            status = reply.status_code
        except httpx.TransportError:
            status = 0
        delivery.answered = time.monotonic()
        delivery.status = status


def ok(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


def _migrated(pair: StreamingPair) -> str:
    """The inbox schema and a business table on the primary, through the multi-host URL."""
    with psycopg.connect(pair.primary.conninfo(), autocommit=True) as conn:
        conn.execute(f"create database {DATABASE}")
    url = pair.conninfo(DATABASE)
    done = run_inbox("db", "upgrade", env=environment(without=("INBOX_",), INBOX_DATABASE__URL=url))
    assert done.returncode == 0, done.stderr
    with psycopg.connect(url) as conn:
        # ``at``: when the handler ran, on the database's clock (this machine's).
        conn.execute(
            "create table payments (event_id bigint not null, amount int, note text,"
            " at timestamptz not null default clock_timestamp())"
        )
    return url


def _listeners(url: str) -> int:
    return int(
        scalar(
            url,
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and application_name like 'pg-inbox listener%%'",
        )
    )


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[list[Served | WorkerProcess]]:
    started: list[Served | WorkerProcess] = []
    yield started
    for process in started:
        process.close()


@pytest.mark.parametrize(
    ("stop_mode", "down_seconds"),
    # planned: a switch-over, the standby promoted a second after a clean stop (all WAL
    # already sent). unplanned: the primary crashes and the standby, synchronous so that
    # no acknowledged commit is only on the primary, is promoted past the write timeout,
    # so requests of the window are answered 503.
    [("fast", 1.0), ("immediate", 3.0)],
    ids=["planned", "unplanned"],
)
def test_receiver_and_worker_follow_a_promoted_standby_without_a_restart(
    server_dir: Path,
    tmp_path: Path,
    unused_tcp_port: int,
    processes: list[Served | WorkerProcess],
    stop_mode: str,
    down_seconds: float,
) -> None:
    with streaming_pair(server_dir, synchronous=stop_mode == "immediate") as pair:
        url = _migrated(pair)
        config = serve_config(tmp_path / "inbox.toml", url, unused_tcp_port, SOURCE)
        served = Served(config, unused_tcp_port, tmp_path / "serve.log")
        processes.append(served)
        worker = WorkerProcess(url, tmp_path, 0)
        processes.append(worker)
        wait_for(lambda: served.status() == 200, timeout=60, what="the receiver healthy")
        wait_for(lambda: _listeners(url) == 1, timeout=60, what="the worker listening")
        source = Settings(database={"url": url}, sources=[SOURCE]).source("shop")
        assert source is not None
        load = SteadyLoad(served.base, source)
        load.start()
        try:
            wait_for(
                lambda: len(load.accepted_since(0)) >= RATE_PER_SECOND * BEFORE_SECONDS,
                timeout=60,
                what="deliveries accepted before the failover",
            )
            wait_for(
                lambda: scalar(url, "select count(*) from payments") > 0,
                timeout=60,
                what="the worker handling them",
            )

            pair.primary.stop(stop_mode)
            stopped = time.monotonic()
            # The outage under test (an HA engine's detection), not a wait for anything.
            time.sleep(down_seconds)
            promoted, promoted_wall = time.monotonic(), time.time()
            pair.standby.promote()
            wait_for(
                lambda: len(load.accepted_since(promoted)) >= RATE_PER_SECOND * AFTER_SECONDS,
                timeout=120,
                what="deliveries accepted after the promotion",
            )
        finally:
            load.stop()

        deliveries = load.deliveries
        first_pass = Counter(d.status for d in deliveries)
        # Requests sent once the primary was gone cannot have committed there.
        receiver_back = min(d.answered or 0.0 for d in load.accepted_since(stopped)) - promoted
        # The provider retries every delivery not answered 2xx; a write that committed after
        # its 503 is then a duplicate.
        retried: Counter[str] = Counter()
        for delivery in deliveries:
            if not ok(delivery.status):
                request = delivery.request
                reply = httpx.post(request.url, content=request.body, headers=request.headers)
                assert reply.status_code == 200, reply.text
                retried[reply.json()["status"]] += 1

        wait_for(
            lambda: (
                scalar(url, "select count(*) from inbox_work where state = 'pending'") == 0
                and scalar(url, "select count(*) from payments")
                >= scalar(url, "select count(*) from inbox_events")
            ),
            timeout=120,
            what="every stored event handled",
        )
        worker_back = (
            scalar(
                url,
                "select extract(epoch from min(at))::float8 from payments"
                " where at > to_timestamp(%s)",
                [promoted_wall],
            )
            - promoted_wall
        )
        print(
            f"{stop_mode}: {len(deliveries)} deliveries, first pass {dict(first_pass)},"
            f" retries {dict(retried)}; receiver back {receiver_back:.3f} s,"
            f" worker {worker_back:.3f} s after the promotion"
        )

        # No 500, no hang: 200, or 503 while no server took writes.
        assert set(first_pass) <= {200, 503}, first_pass
        acknowledged = {d.request.key for d in deliveries if ok(d.status)}
        stored = Counter(key for (key,) in rows(url, "select idempotency_key from inbox_events"))
        assert acknowledged - set(stored) == set(), "acknowledged deliveries lost"
        assert set(stored) == {d.request.key for d in deliveries}
        assert max(stored.values()) == 1
        handled = dict(
            rows(
                url,
                "select e.idempotency_key, count(p.event_id) from inbox_events e"
                " left join payments p on p.event_id = e.id group by 1",
            )
        )
        assert Counter(handled.values()) == {1: len(deliveries)}, "a handler effect not once"

        # The same processes throughout, and back within the bound.
        assert served.process.poll() is None, served.output()
        assert worker.alive(), worker.output()
        notes = {note for (note,) in rows(url, "select distinct note from payments")}
        assert notes == {f"pid {worker.pid}"}
        assert receiver_back < BACK_WITHIN_SECONDS, served.output()
        assert worker_back < BACK_WITHIN_SECONDS, worker.output()
        lost = [
            json.loads(line)
            for line in worker.output().splitlines()
            if line.startswith("{") and "worker_connection_lost" in line
        ]
        assert lost, worker.output()
        assert {entry["server"] for entry in lost} == {describe_server(url)}

        assert worker.terminate() == 0, worker.output()
        served.process.terminate()
        assert served.process.wait(timeout=30) == 0, served.output()
