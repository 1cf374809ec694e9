"""Receiver throughput and acknowledgement latency through HTTP, on loopback.

    python -m benchmarks receiver_load                    # 3 runs x 6,000 requests per cell
    python -m benchmarks receiver_load --wsgi flask django   # + Flask and Django on gunicorn
    python -m benchmarks receiver_load --wsgi flask:1x16 flask:2x16   # gunicorn's shapes
    python -m benchmarks receiver_load --quick            # a smoke run, Flask and Django too
    python -m benchmarks receiver_load --database-url postgresql://postgres@127.0.0.1/postgres

Starts `inbox serve` on a fresh, migrated database, and beside it the hand-written receiver
a team would write instead (``benchmarks/_handwritten.py``: Starlette on the same uvicorn,
the standardwebhooks SDK, a psycopg pool, one INSERT ... ON CONFLICT DO NOTHING RETURNING
committed before the 200) and a no-op ASGI endpoint on the same uvicorn (the driver's own
ceiling). With ``--wsgi``, also the Django view (``inbox.contrib.django``) and the Flask
blueprint (``inbox.contrib.flask``), mounted as docs/receiving.md says
(``benchmarks/_django_site.py``, ``benchmarks/_flask_app.py``) and served by gunicorn's
threaded worker (gthread), each on a database of its own (their writers' connections are
named as `inbox serve`'s). It pre-signs N Standard Webhooks requests per run (unique ids,
so every one is a new event) and posts them from C concurrent keep-alive connections (a
minimal HTTP/1.1 client on raw sockets; ``--driver httpx`` for httpx, which is itself the
bottleneck on a small machine). Each cell is the median of --runs runs, after 200
unmeasured warm-up requests; the targets' runs are interleaved (every round runs each
target once), so a noisy neighbour's minute spreads over all of them. Each run also records
the CPU time per request of the server's processes, of the PostgreSQL backends of its
connections and of the driver, and how busy the machine's CPUs were. Bounded: --requests
per run, loopback only.

The server is --database-url (a maintenance database; the benchmark creates and drops its
own), else ``INBOX_BENCH_DATABASE_URL``, else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import psycopg

from benchmarks._common import fetch_one, own_cpu_seconds
from benchmarks._http_load import Request, Run, drive, drive_raw, signed_requests
from benchmarks._report_frame import Driver
from benchmarks._servers import (
    BEST_SHAPE,
    WSGI_APPS,
    Served,
    WsgiApp,
    backends_cpu,
    handwritten,
    inbox_serve,
    noop_endpoint,
    wsgi,
)
from inbox._core.database import migrate as _migrate
from inbox.testing import new_database

Post = Callable[[str, Sequence[Request], int], Awaitable[Run]]

WARMUP_REQUESTS = 200
INBOX_TARGET = "inbox serve"
PEER_TARGET = "hand-written"
NOOP_TARGET = "no-op endpoint"


@dataclass
class Measured:
    """One run against one target: the driver's view, and the CPU time both sides spent."""

    run: Run
    server_cpu: float  # seconds, the server's processes
    driver_cpu: float  # seconds, this process (the load driver)
    database_cpu: float  # seconds, the PostgreSQL backends of the server's connections
    busy: float  # the machine's CPUs busy over the run, 0..1 (every process, any helper's)


@dataclass
class HttpCell:
    target: str  # INBOX_TARGET | PEER_TARGET | NOOP_TARGET | a WsgiApp's label
    concurrency: int
    measured: list[Measured]

    @property
    def runs(self) -> list[Run]:
        return [m.run for m in self.measured]

    @property
    def rps(self) -> float:
        return statistics.median(r.rps for r in self.runs)

    def _median_run(self) -> Run:
        return sorted(self.runs, key=lambda r: r.rps)[len(self.runs) // 2]

    @property
    def p50(self) -> float:
        return self._median_run().percentile(0.50)

    @property
    def p99(self) -> float:
        return self._median_run().percentile(0.99)

    @property
    def server_us(self) -> float:
        """The server's CPU microseconds per request (median over the runs)."""
        return statistics.median(m.server_cpu / m.run.requests * 1e6 for m in self.measured)

    @property
    def driver_us(self) -> float:
        """The load driver's CPU microseconds per request (median over the runs)."""
        return statistics.median(m.driver_cpu / m.run.requests * 1e6 for m in self.measured)

    @property
    def database_us(self) -> float:
        """CPU microseconds per request of the server's PostgreSQL backends (median)."""
        return statistics.median(m.database_cpu / m.run.requests * 1e6 for m in self.measured)

    @property
    def busy(self) -> float:
        return statistics.median(m.busy for m in self.measured)

    @property
    def failures(self) -> int:
        return sum(r.failures for r in self.runs)


@dataclass
class HttpResult:
    cells: list[HttpCell]
    requests: int
    runs: int
    driver: str
    stored: int  # events in the database after every run: one per accepted request
    peer_stored: int  # rows the hand-written receiver stored
    workers: int = 1
    wsgi_stored: dict[str, int] = field(default_factory=dict)  # events, by WSGI target

    def cell(self, target: str, concurrency: int) -> HttpCell | None:
        found = [c for c in self.cells if c.target == target and c.concurrency == concurrency]
        return found[0] if found else None

    def vs_peer(self, concurrency: int) -> float | None:
        """`inbox serve`'s median req/s over the hand-written receiver's, at ``concurrency``."""
        ours, peer = self.cell(INBOX_TARGET, concurrency), self.cell(PEER_TARGET, concurrency)
        return ours.rps / peer.rps if ours and peer and peer.rps else None

    def sync_peer(self, concurrency: int) -> HttpCell | None:
        """The hand-written Flask receiver's cell, the sync receivers' peer, if it ran."""
        name = WSGI_APPS["handwritten"][1]
        cells = [c for c in self.cells if c.concurrency == concurrency]
        return next((c for c in cells if c.target.startswith(name)), None)

    def expected(self, target: str) -> int:
        cells = [c for c in self.cells if c.target == target]
        return sum(r.requests for c in cells for r in c.runs) + WARMUP_REQUESTS * len(cells)


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU since boot, from /proc/stat."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class _Backends:
    """The CPU time of the PostgreSQL backends serving one receiver's connections, found by
    the application_name they report (the servers run on this machine: /proc is theirs)."""

    def __init__(self, conn: psycopg.Connection[Any], application_name: str) -> None:
        self._conn, self._name = conn, application_name

    def cpu(self) -> dict[int, float]:
        return backends_cpu(self._conn, self._name) if self._name else {}


def _measure_one(
    post: Post, served: Served, backends: _Backends, requests: int, concurrency: int
) -> Measured:
    signed = signed_requests(requests)  # before the clocks start
    db_before = backends.cpu()
    machine_before = _machine_ticks()
    server_before, driver_before = served.cpu_seconds(), own_cpu_seconds()
    run = anyio.run(post, served.url, signed, concurrency)
    server, driver = served.cpu_seconds() - server_before, own_cpu_seconds() - driver_before
    (busy_after, total_after), (busy_before, total_before) = _machine_ticks(), machine_before
    busy, total = busy_after - busy_before, total_after - total_before
    db_after = backends.cpu()
    database = sum(cpu - db_before.get(pid, 0.0) for pid, cpu in db_after.items())
    return Measured(run, server, driver, database, busy / total if total else 0.0)


def measure(server: str, args: argparse.Namespace, logs: Path) -> HttpResult:
    """Every cell on ``server``: `inbox serve`, the hand-written receiver, the no-op
    endpoint and each ``--wsgi`` target at each ``--concurrency``, their runs interleaved
    (round r runs every target once, in an order that rotates), so a noisy neighbour's
    minute spreads over all of them."""
    requests, runs, workers = args.requests, args.runs, args.workers
    post: Post = drive_raw if args.driver == "raw" else drive
    cells: list[HttpCell] = []
    with contextlib.ExitStack() as stack:
        db_url = stack.enter_context(new_database(server))
        _migrate.upgrade(db_url)
        targets = {
            INBOX_TARGET: stack.enter_context(inbox_serve(db_url, logs, workers)),
            PEER_TARGET: stack.enter_context(handwritten(db_url, logs)),
            NOOP_TARGET: stack.enter_context(noop_endpoint(logs)),
        }
        databases = dict.fromkeys(targets, db_url)
        for target in args.wsgi:
            own = stack.enter_context(new_database(server))
            _migrate.upgrade(own)
            targets[target.label] = stack.enter_context(wsgi(target, own, logs))
            databases[target.label] = own
        watch = {
            url: stack.enter_context(psycopg.connect(url, autocommit=True))
            for url in set(databases.values())
        }
        backends = {
            label: _Backends(watch[databases[label]], s.application_name)
            for label, s in targets.items()
        }
        for c in args.concurrency:
            row = {label: HttpCell(label, c, []) for label in targets}
            for served in targets.values():
                anyio.run(post, served.url, signed_requests(WARMUP_REQUESTS), c)
            labels = list(targets)
            for round_no in range(runs):
                shift = round_no % len(labels)
                for label in labels[shift:] + labels[:shift]:
                    row[label].measured.append(
                        _measure_one(post, targets[label], backends[label], requests, c)
                    )
            for cell in row.values():
                print(
                    f"http {cell.target:<23} {c:>3} connections: {cell.rps:>7,.0f} req/s,"
                    f" p50 {cell.p50:.1f} ms, p99 {cell.p99:.1f} ms,"
                    f" CPU us/req: server {cell.server_us:,.0f},"
                    f" database {cell.database_us:,.0f}, driver {cell.driver_us:,.0f};"
                    f" machine busy {cell.busy:.0%}; non-2xx {cell.failures}",
                    flush=True,
                )
            cells += row.values()
        stored, peer_stored = fetch_one(
            db_url,
            "select (select count(*) from inbox_events), (select count(*) from handwritten_events)",
        )
        wsgi_stored = {
            t.label: int(fetch_one(databases[t.label], f"select count(*) from {table}")[0])
            for t in args.wsgi
            for table in ["handwritten_events" if t.app == "handwritten" else "inbox_events"]
        }
    return HttpResult(
        cells, requests, runs, args.driver, int(stored), int(peer_stored), workers, wsgi_stored
    )


def render(result: HttpResult) -> list[str]:
    lines = [
        "## Ingest through HTTP: `inbox serve` beside a hand-written receiver, signed Standard"
        " Webhooks requests",
        "",
        "| connections | target | req/s (median) | range | vs hand-written | vs hand-written"
        " Flask | p50 ms | p99 ms | CPU µs/req: server | database | driver | machine busy"
        " | non-2xx |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in result.cells:
        rates = [r.rps for r in c.runs]
        peer = result.cell(PEER_TARGET, c.concurrency)
        ratio = f"{c.rps / peer.rps:.2f}x" if peer and peer.rps and c.target != NOOP_TARGET else "—"
        sync_peer = result.sync_peer(c.concurrency)
        sync_ratio = "—"
        if sync_peer and sync_peer.rps and c.target not in (NOOP_TARGET, sync_peer.target):
            sync_ratio = f"{c.rps / sync_peer.rps:.2f}x"
        target = c.target
        if target == INBOX_TARGET and result.workers != 1:
            target += f" --workers {result.workers}"
        lines.append(
            f"| {c.concurrency} | {target} | {c.rps:,.0f} | {min(rates):,.0f}-{max(rates):,.0f}"
            f" | {ratio} | {sync_ratio} | {c.p50:.1f} | {c.p99:.1f} | {c.server_us:,.0f}"
            f" | {c.database_us:,.0f} | {c.driver_us:,.0f} | {c.busy:.0%} | {c.failures} |"
        )
    lines += [
        "",
        f"{result.requests:,} requests per run, each a new event (a unique webhook-id),"
        f" {result.runs} run(s) per cell after {WARMUP_REQUESTS} warm-up requests, the targets'"
        " runs interleaved; latency percentiles of the median run. Driver:"
        f" {result.driver} ({os.cpu_count()} CPUs shared by the driver, the servers and"
        " PostgreSQL; 'server CPU' counts the receiver's processes, not PostgreSQL's). The"
        " hand-written receiver (benchmarks/_handwritten.py): Starlette on the same uvicorn"
        " (httptools, uvloop), the standardwebhooks SDK's verify, a psycopg pool of"
        " `inbox serve`'s size, one INSERT ... ON CONFLICT DO NOTHING RETURNING committed before"
        " its 200; it queues no work row. The no-op endpoint on the same uvicorn is the"
        f" driver's own ceiling. Events stored by `inbox serve`: {result.stored:,} (expected"
        f" {result.expected(INBOX_TARGET):,}); by the hand-written receiver:"
        f" {result.peer_stored:,} (expected {result.expected(PEER_TARGET):,}).",
    ]
    if result.wsgi_stored:
        stored = "; ".join(
            f"by {label}: {n:,} (expected {result.expected(label):,})"
            for label, n in result.wsgi_stored.items()
        )
        lines += [
            "",
            "Flask and Django: the blueprint and view as docs/receiving.md mounts them"
            " (benchmarks/_flask_app.py, benchmarks/_django_site.py) under gunicorn's gthread"
            " worker, WORKERSxTHREADS as named, each on a database of its own; their"
            " `InboxWriter` has `inbox serve`'s settings (pool, timeouts). Their peer, the"
            " hand-written Flask receiver (benchmarks/_handwritten_wsgi.py): the hand-written"
            " receiver's endpoint as a Flask view on a psycopg ConnectionPool of the same size,"
            f" under the same gunicorn. Events stored {stored}.",
        ]
    return lines


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--database-url", default=None, help="a maintenance database to use")
    p.add_argument("--requests", type=int, default=6000)
    p.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    p.add_argument("--driver", choices=["raw", "httpx"], default="raw", help="the load client")
    p.add_argument("--workers", type=int, default=1, help="`inbox serve --workers N` (default: 1)")
    p.add_argument(
        "--wsgi",
        type=WsgiApp.parse,
        nargs="*",
        default=[],
        metavar="APP[:WxT]",
        help="also serve these through gunicorn (gthread): flask, django, handwritten (the"
        " hand-written Flask receiver), each with W workers"
        " of T threads (default: its best, "
        + ", ".join(f"{app}:{w}x{t}" for app, (w, t) in BEST_SHAPE.items())
        + "); none unless named",
    )


QUICK = {
    "requests": 300,
    "runs": 1,
    "wsgi": [WsgiApp.parse(app) for app in WSGI_APPS],
}
DRIVER = Driver("receiver_load", __doc__, _options, measure, render, quick=QUICK)
