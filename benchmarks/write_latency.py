"""Sync write latency: InboxWriter from threads, this checkout beside an older commit's.

    python -m benchmarks write_latency                     # 5 runs x 5 s at 16 threads
    python -m benchmarks write_latency --threads 16 64 --baseline 415abfa
    python -m benchmarks write_latency --quick             # a smoke run of a few seconds

Each thread of one process writes new events (a ~1 KB body) back to back through one
``InboxWriter`` with a pool of as many connections as threads; each write is timed from its
call to its return. The writer of this checkout runs beside the one of ``--baseline`` (by
default the last commit before the sync writer grouped its callers' writes): both in a
process of their own (``benchmarks/_timed_writes.py``), the baseline's with that commit's
``inbox`` (``git archive``) first on its path. Each run gets a fresh database migrated by
its own writer's code; the two writers' runs alternate, so a noisy neighbour's minute
spreads over both; the table quotes the median over runs of each run's percentiles.

The database is --database-url (a maintenance database; the benchmark creates and drops its
own), else ``INBOX_BENCH_DATABASE_URL``, else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._common import REPO, child_env, percentile
from benchmarks._report_frame import Driver
from inbox.testing import new_database

BASELINE = "415abfa"  # the sync writer's last commit before it grouped writes
THIS = "this checkout"


@dataclass
class TimedRun:
    writes: int
    seconds: float
    p50: float  # ms
    p99: float  # ms
    worst: float  # ms

    @property
    def rate(self) -> float:
        return self.writes / self.seconds


@dataclass
class Cell:
    writer: str  # THIS or the baseline's revision
    threads: int
    runs: list[TimedRun] = field(default_factory=list)

    def median(self, what: str) -> float:
        return float(statistics.median(getattr(r, what) for r in self.runs))


@dataclass
class LatencyResult:
    cells: list[Cell]
    baseline: str
    duration: float
    warmup: float

    def cell(self, writer: str, threads: int) -> Cell | None:
        found = [c for c in self.cells if (c.writer, c.threads) == (writer, threads)]
        return found[0] if found else None


def _child(tree: Path | None, *argv: str) -> str:
    """Run ``benchmarks._timed_writes`` with ``tree``'s ``inbox`` (None: this checkout's):
    ``-m`` puts the working folder first on the path, so the child runs in ``tree``."""
    paths = [str(tree)] if tree is not None else []
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks._timed_writes", *argv],
        env=child_env(PYTHONPATH=os.pathsep.join([*paths, str(REPO)])),
        cwd=tree or REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmarks._timed_writes {argv[0]} failed:\n{done.stderr}")
    return done.stdout


def export(revision: str, into: Path) -> Path:
    """``revision``'s ``inbox`` package and migrations, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "inbox", "alembic"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise RuntimeError(f"git archive {revision}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def one_run(server: str, tree: Path | None, threads: int, args: argparse.Namespace) -> TimedRun:
    with new_database(server) as url:
        _child(tree, "migrate", url)
        out = json.loads(
            _child(tree, "write", url, str(threads), str(args.warmup), str(args.duration))
        )
    measured = Path(out["inbox"]).resolve()
    if not measured.is_relative_to((tree or REPO).resolve()):
        raise RuntimeError(f"the writer measured came from {measured}, not from {tree or REPO}")
    ms = [t * 1000 for t in out["latencies"]]
    if not ms:
        raise RuntimeError("no write finished inside the measured window")
    return TimedRun(len(ms), out["seconds"], percentile(ms, 50), percentile(ms, 99), max(ms))


def measure(server: str, args: argparse.Namespace, logs: Path) -> LatencyResult:
    """Both writers at each ``--threads``, ``--runs`` times, alternating."""
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory(prefix="inbox-bench-baseline-") as tmp:
        trees = {THIS: None, args.baseline: export(args.baseline, Path(tmp))}
        for threads in args.threads:
            row = {writer: Cell(writer, threads) for writer in trees}
            order = list(trees)
            for round_no in range(args.runs):
                for writer in order[round_no % 2 :] + order[: round_no % 2]:
                    run = one_run(server, trees[writer], threads, args)
                    row[writer].runs.append(run)
                    print(
                        f"run {round_no + 1}/{args.runs} {threads:>3} threads, {writer:<14}"
                        f" {run.rate:>7,.0f} writes/s, p50 {run.p50:.1f} ms,"
                        f" p99 {run.p99:.1f} ms, max {run.worst:.1f} ms",
                        flush=True,
                    )
            cells += row.values()
    return LatencyResult(cells, args.baseline, args.duration, args.warmup)


def render(result: LatencyResult) -> list[str]:
    lines = [
        "## Sync write latency: `InboxWriter` from threads, this checkout beside"
        f" {result.baseline}",
        "",
        "| threads | writer | writes/s (median) | p50 ms | p99 ms | p99 range | max ms"
        f" | p99 ÷ {result.baseline}'s | writes/s ÷ {result.baseline}'s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in result.cells:
        base = result.cell(result.baseline, c.threads)
        p99s = [r.p99 for r in c.runs]
        ratios = "— | —"
        if base is not None and c.writer != result.baseline:
            ratios = (
                f"{c.median('p99') / base.median('p99'):.2f}x"
                f" | {c.median('rate') / base.median('rate'):.2f}x"
            )
        lines.append(
            f"| {c.threads} | {c.writer} | {c.median('rate'):,.0f} | {c.median('p50'):.1f}"
            f" | {c.median('p99'):.1f} | {min(p99s):.1f}-{max(p99s):.1f}"
            f" | {c.median('worst'):.1f} | {ratios} |"
        )
    runs = len(result.cells[0].runs) if result.cells else 0
    lines += [
        "",
        f"{runs} run(s) per writer, {result.duration:g} s measured after {result.warmup:g} s"
        " of warm-up, a fresh database per run, the writers' runs alternating; each figure is"
        " the median over the runs of that run's figure. One process per run, a pool of as"
        " many connections as threads, notify after commit (the default).",
    ]
    return lines


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--database-url", default=None, help="a maintenance database to use")
    p.add_argument("--threads", type=int, nargs="+", default=[16], help="writing threads")
    p.add_argument("--duration", type=float, default=5.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds before")
    p.add_argument(
        "--baseline", default=BASELINE, help=f"the commit to compare with (default {BASELINE})"
    )


QUICK = {"runs": 1, "duration": 0.5, "warmup": 0.1}
DRIVER = Driver("write_latency", __doc__, _options, measure, render, runs=5, quick=QUICK)
