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
from collections.abc import Sequence
from pathlib import Path

import anyio
import psycopg

from benchmarks._common import OUT_DIR
from benchmarks._http_load import drive_raw, signed_requests
from benchmarks._report_frame import Report
from benchmarks._servers import Served, inbox_serve, process_tree
from inbox._core import migrate as _migrate
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


def measure(
    server: str, *, requests: int, chunk: int, concurrency: int, workers: int, logs: Path
) -> list[tuple[int, float, float, int]]:
    """Rows of (requests sent, RSS MiB, req/s of the chunk, non-2xx so far)."""
    rows: list[tuple[int, float, float, int]] = []
    with new_database(server) as db_url:
        _migrate.upgrade(db_url)
        with inbox_serve(db_url, logs, workers) as served:
            rows.append((0, rss_mb(served), 0.0, 0))
            sent, failures = 0, 0
            while sent < requests:
                size = min(chunk, requests - sent)
                run = anyio.run(drive_raw, served.url, _chunk(size), concurrency)
                sent += size
                failures += run.failures
                rows.append((sent, rss_mb(served), run.rps, failures))
                print(
                    f"{sent:>10,} requests: RSS {rows[-1][1]:6.1f} MiB,"
                    f" {run.rps:,.0f} req/s, non-2xx {failures}",
                    flush=True,
                )
        with psycopg.connect(db_url) as conn:
            row = conn.execute("select count(*) from inbox_events").fetchone()
            print(f"events stored: {row[0] if row else 0:,}", flush=True)
    return rows


def render(rows: list[tuple[int, float, float, int]], tolerance: float, workers: int) -> list[str]:
    first, last = rows[1][1], rows[-1][1]
    growth = (last - first) / first if first else 0.0
    flat = "yes" if growth <= tolerance else "no"
    step = max(1, (len(rows) - 1) // 10)
    shown = [rows[0], *rows[1::step]]
    if shown[-1] != rows[-1]:
        shown.append(rows[-1])
    lines = [
        "## `inbox serve` RSS over a long run",
        "",
        "| requests sent | RSS MiB | req/s (chunk) | non-2xx so far |",
        "|---:|---:|---:|---:|",
        *(f"| {n:,} | {rss:.1f} | {rate:,.0f} | {bad} |" for n, rss, rate, bad in shown),
        "",
        f"RSS after the first chunk {first:.1f} MiB, after the last {last:.1f} MiB:"
        f" {growth:+.1%} (flat within {tolerance:.0%}: {flat}). `--workers {workers}`;"
        " one request in ten a duplicate.",
    ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    report = Report("benchmarks.receiver_rss", "# pg-inbox receiver RSS", argv)
    p = argparse.ArgumentParser(prog="python -m benchmarks receiver_rss", description=__doc__)
    p.add_argument("--database-url", default=None, help="a maintenance database to use")
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--chunk", type=int, default=50_000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--out", type=Path, default=OUT_DIR / "receiver_rss.md")
    args = p.parse_args(report.argv)
    with report.server(args.database_url) as (server, logs):
        rows = measure(
            server,
            requests=args.requests,
            chunk=args.chunk,
            concurrency=args.concurrency,
            workers=args.workers,
            logs=logs,
        )
    report.finish(args.out, [render(rows, args.tolerance, args.workers)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
