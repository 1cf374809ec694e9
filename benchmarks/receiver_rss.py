"""`inbox serve`'s memory over a long run: RSS after every chunk of requests.

    python -m benchmarks receiver_rss                        # 1,000,000 requests, ~15 min
    python -m benchmarks receiver_rss --requests 100000      # a shorter look
    python -m benchmarks receiver_rss --database-url postgresql://postgres@127.0.0.1/postgres

Starts `inbox serve` on a fresh, migrated database and posts --requests signed Standard
Webhooks requests from --concurrency keep-alive connections (the raw driver of
receiver_load), in chunks of --chunk; one request in ten re-sends an earlier one of its
chunk (a duplicate: the single write path and a delivery row). After each chunk it reads
the resident set size of the server's processes (VmRSS, summed over `--workers`). Flat
means: the RSS after the last chunk is within --tolerance of the RSS after the first
(the first chunk warms the caches, the pools and the allocator's arenas).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import anyio

from benchmarks._common import fetch_one
from benchmarks._http_load import drive_raw, signed_requests
from benchmarks._report_frame import Driver
from benchmarks._servers import Served, inbox_serve, process_tree
from inbox._core.database import migrate as _migrate
from inbox.testing import new_database


def rss_mb(served: Served) -> float:
    """The resident set size of the server's processes, in MiB."""
    total_kb = 0
    for pid in process_tree(served.pid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # gone
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kb += int(line.split()[1])
    return total_kb / 1024


def _chunk(size: int) -> list[tuple[bytes, dict[str, str]]]:
    requests = signed_requests(size)
    for i in range(9, size, 10):
        requests[i] = requests[i - 5]  # a duplicate of one sent earlier in the chunk
    return requests


@dataclass
class RssRun:
    """Rows of (requests sent, RSS MiB, req/s of the chunk, non-2xx so far), the first
    before any request."""

    rows: list[tuple[int, float, float, int]]
    tolerance: float
    workers: int

    @property
    def growth(self) -> float:
        """The RSS after the last chunk over the RSS after the first, less one."""
        first, last = self.rows[1][1], self.rows[-1][1]
        return (last - first) / first if first else 0.0


def measure(server: str, args: argparse.Namespace, logs: Path) -> RssRun:
    """--requests signed requests to `inbox serve` on a fresh database, in chunks."""
    rows: list[tuple[int, float, float, int]] = []
    with new_database(server) as db_url:
        _migrate.upgrade(db_url)
        with inbox_serve(db_url, logs, args.workers) as served:
            rows.append((0, rss_mb(served), 0.0, 0))
            sent, failures = 0, 0
            while sent < args.requests:
                size = min(args.chunk, args.requests - sent)
                run = anyio.run(drive_raw, served.url, _chunk(size), args.concurrency)
                sent += size
                failures += run.failures
                rows.append((sent, rss_mb(served), run.rps, failures))
                print(
                    f"{sent:>10,} requests: RSS {rows[-1][1]:6.1f} MiB,"
                    f" {run.rps:,.0f} req/s, non-2xx {failures}",
                    flush=True,
                )
        stored = fetch_one(db_url, "select count(*) from inbox_events")[0]
        print(f"events stored: {stored:,}", flush=True)
    return RssRun(rows, args.tolerance, args.workers)


def render(result: RssRun) -> list[str]:
    rows, tolerance = result.rows, result.tolerance
    first, last = rows[1][1], rows[-1][1]
    flat = "yes" if result.growth <= tolerance else "no"
    step = max(1, (len(rows) - 1) // 10)
    shown = [rows[0], *rows[1::step]]
    if shown[-1] != rows[-1]:
        shown.append(rows[-1])
    return [
        "## `inbox serve` RSS over a long run",
        "",
        "| requests sent | RSS MiB | req/s (chunk) | non-2xx so far |",
        "|---:|---:|---:|---:|",
        *(f"| {n:,} | {rss:.1f} | {rate:,.0f} | {bad} |" for n, rss, rate, bad in shown),
        "",
        f"RSS after the first chunk {first:.1f} MiB, after the last {last:.1f} MiB:"
        f" {result.growth:+.1%} (flat within {tolerance:.0%}: {flat}). `--workers"
        f" {result.workers}`; one request in ten a duplicate.",
    ]


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--database-url", default=None, help="a maintenance database to use")
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--chunk", type=int, default=50_000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--tolerance", type=float, default=0.05)


DRIVER = Driver("receiver_rss", __doc__, _options, measure, render, runs=None)
