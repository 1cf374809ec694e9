"""Receiver throughput and acknowledgement latency through HTTP, on loopback.

    python -m benchmarks receiver_load                    # 3 runs x 3,000 requests per cell
    python -m benchmarks receiver_load --quick            # a smoke run
    python -m benchmarks receiver_load --database-url postgresql://postgres@127.0.0.1/postgres

Starts `inbox serve` on a fresh, migrated database, pre-signs N Standard Webhooks requests
(unique ids, so every one is a new event: one INSERT + commit each), and posts them from C
concurrent keep-alive connections (a minimal HTTP/1.1 client on raw sockets; ``--driver
httpx`` for httpx, which is itself the bottleneck on a small machine). The same driver is
then pointed at a no-op ASGI endpoint on the same uvicorn, to show how much of the ceiling is
the driver. Each cell is the median of --runs runs, after 200 unmeasured warm-up requests.
Bounded: --requests per run, loopback only.

The server is --database-url (a maintenance database; the benchmark creates and drops its
own), else ``INBOX_BENCH_DATABASE_URL``, else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import psycopg

from benchmarks._common import (
    OUT_DIR,
)
from benchmarks._http_load import Run, drive, drive_raw, signed_requests
from benchmarks._report_frame import Report
from benchmarks._servers import inbox_serve, noop_endpoint
from inbox._core import migrate as _migrate
from inbox.testing import new_database

WARMUP_REQUESTS = 200
INBOX_TARGET = "inbox serve"
NOOP_TARGET = "no-op endpoint"


@dataclass
class HttpCell:
    target: str  # INBOX_TARGET | NOOP_TARGET
    concurrency: int
    runs: list[Run]

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
    def failures(self) -> int:
        return sum(r.failures for r in self.runs)


@dataclass
class HttpResult:
    cells: list[HttpCell]
    requests: int
    runs: int
    driver: str
    stored: int  # events in the database after every run: one per accepted request


def measure(
    server: str,
    *,
    requests: int,
    runs: int,
    concurrency: Sequence[int],
    driver: str = "raw",
    logs: Path,
) -> HttpResult:
    """Every cell on ``server``: `inbox serve` and the no-op endpoint at each concurrency."""
    post = drive_raw if driver == "raw" else drive
    cells: list[HttpCell] = []
    with new_database(server) as db_url:
        _migrate.upgrade(db_url)
        with inbox_serve(db_url, logs) as inbox_url, noop_endpoint(logs) as noop_url:
            targets = {INBOX_TARGET: inbox_url, NOOP_TARGET: noop_url}
            for c in concurrency:
                for label, url in targets.items():
                    anyio.run(post, url, signed_requests(WARMUP_REQUESTS), c)
                    cell = HttpCell(label, c, [])
                    for _ in range(runs):
                        cell.runs.append(anyio.run(post, url, signed_requests(requests), c))
                    print(
                        f"http {label:<15} {c:>3} connections: {cell.rps:>7,.0f} req/s,"
                        f" p50 {cell.p50:.1f} ms, p99 {cell.p99:.1f} ms,"
                        f" non-2xx {cell.failures}",
                        flush=True,
                    )
                    cells.append(cell)
        with psycopg.connect(db_url) as conn:
            row = conn.execute("select count(*) from inbox_events").fetchone()
    return HttpResult(cells, requests, runs, driver, int(row[0]) if row else 0)


def render(result: HttpResult) -> list[str]:
    lines = [
        "## Ingest through HTTP: `inbox serve`, signed Standard Webhooks requests",
        "",
        "| connections | target | req/s (median) | range | p50 ms | p99 ms | non-2xx |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for c in result.cells:
        rates = [r.rps for r in c.runs]
        lines.append(
            f"| {c.concurrency} | {c.target} | {c.rps:,.0f} | {min(rates):,.0f}-{max(rates):,.0f}"
            f" | {c.p50:.1f} | {c.p99:.1f} | {c.failures} |"
        )
    expected = sum(r.requests for c in result.cells if c.target == INBOX_TARGET for r in c.runs)
    expected += WARMUP_REQUESTS * sum(1 for c in result.cells if c.target == INBOX_TARGET)
    lines += [
        "",
        f"{result.requests:,} requests per run, each a new event (a unique webhook-id),"
        f" {result.runs} run(s) per cell after {WARMUP_REQUESTS} warm-up requests; latency"
        f" percentiles of the median run. Driver: {result.driver} ({os.cpu_count()} CPUs shared"
        " by the driver, the server and PostgreSQL); the no-op endpoint on the same uvicorn"
        f" is the driver's own ceiling. Events stored by `inbox serve`: {result.stored:,}"
        f" (expected {expected:,}).",
    ]
    return lines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks receiver_load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--database-url", default=None, help="a maintenance database to use")
    p.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    p.add_argument("--driver", choices=["raw", "httpx"], default="raw", help="the load client")
    p.add_argument("--out", type=Path, default=OUT_DIR / "receiver_load.md")
    args = p.parse_args(argv)
    if args.quick:
        args.requests, args.runs = 300, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    report = Report("benchmarks.receiver_load", "# pg-inbox receiver benchmark", argv)
    args = parse_args(report.argv)
    with report.server(args.database_url) as (server, logs):
        result = measure(
            server,
            requests=args.requests,
            runs=args.runs,
            concurrency=args.concurrency,
            driver=args.driver,
            logs=logs,
        )
    report.finish(args.out, [render(result)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
