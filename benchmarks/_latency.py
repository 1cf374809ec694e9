"""Figure 4, wake latency at idle: commit of a write -> its handler's start, one worker.

See ``benchmarks.processing`` for what is measured and how.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._common import DIRECT, Route, median, percentile
from benchmarks._payloads import EVENT_TYPE, make_body, make_headers
from benchmarks._systems import Env, System, peer, reach, spawn, stop, worker_command
from inbox import AsyncInboxWriter
from inbox.testing import new_database

WARMUP_EVENTS = 5


def read_times(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, stamp = line.partition(" ")
            if stamp:
                out.setdefault(key, float(stamp))
    return out


async def _inbox_writes(
    url: str, count: int, gap: tuple[float, float], out: Path, options: dict[str, Any]
) -> None:
    writer = AsyncInboxWriter(url, **options)
    try:
        with out.open("w") as f:
            for i in range(count):
                key = f"k{i}"
                await writer.write(
                    "bench", key, make_body(key), make_headers(key), event_type=EVENT_TYPE
                )
                f.write(f"{key} {time.time():.6f}\n")
                await asyncio.sleep(random.uniform(*gap) / 1000)
    finally:
        await writer.close()


@dataclass
class Latency:
    system: System
    values_ms: list[float]
    missing: int
    short_gap_ms: list[float]  # writes that came < 50 ms after the previous one
    commits: int


def run_latency(
    env: Env,
    system: System,
    count: int,
    gap: tuple[float, float],
    timeout: float,
    route: Route = DIRECT,
) -> Latency:
    """``route``: how pg-inbox's writer and worker reach the database (the peers' always
    directly)."""
    with (
        new_database(env.server, template=env.templates[system.family]) as url,
        tempfile.TemporaryDirectory(prefix="inbox-bench-lat-") as tmp,
    ):
        record, commits_path = Path(tmp) / "handled", Path(tmp) / "committed"
        record.touch()
        cmd = worker_command(env, system, url, record=str(record))
        parts, route_env = reach(route, system, url)
        proc = spawn(
            env, cmd, parts, f"latency-{system.name}", INBOX_BENCH_RECORD=str(record), **route_env
        )
        try:
            time.sleep(3.0)  # connected and idle (LISTEN issued), first sweep done
            if system.family == "inbox":
                options = route.writer_options()
                asyncio.run(_inbox_writes(parts, count, gap, commits_path, options))
            else:
                family, _, driver = system.name.partition("-")
                args = ["write", family, url, str(count), "--out", str(commits_path)]
                args += ["--gap-ms", f"{gap[0]:g}-{gap[1]:g}"]
                if driver:
                    args += ["--driver", driver]
                peer(env, *args)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and len(read_times(record)) < count:
                time.sleep(0.2)
        finally:
            stop([proc])
        committed, handled = read_times(commits_path), read_times(record)
    keys = [f"k{i}" for i in range(WARMUP_EVENTS, count)]
    values, short = [], []
    missing = 0
    prev_commit: float | None = None
    for i in range(count):
        key = f"k{i}"
        c = committed.get(key)
        h = handled.get(key)
        gap_before = None if prev_commit is None or c is None else c - prev_commit
        prev_commit = c if c is not None else prev_commit
        if i < WARMUP_EVENTS:
            continue
        if c is None or h is None:
            missing += 1
            continue
        ms = (h - c) * 1000
        values.append(ms)
        if gap_before is not None and gap_before < 0.05:
            short.append(ms)
    return Latency(system, values, missing, short, len([k for k in keys if k in committed]))


@dataclass
class LatencyCell:
    """One system's wake latency over several runs: each figure is the median of the runs'."""

    system: System
    runs: list[Latency] = field(default_factory=list)

    def _measured(self) -> list[Latency]:
        return [r for r in self.runs if r.values_ms]

    def percentile(self, p: float) -> float | None:
        measured = self._measured()
        return median([percentile(r.values_ms, p) for r in measured]) if measured else None

    def per_run(self, p: float) -> list[float]:
        return [percentile(r.values_ms, p) for r in self._measured()]


def run_latency_cells(
    env: Env, systems: list[System], count: int, gap: tuple[float, float], runs: int
) -> list[LatencyCell]:
    """Each system ``runs`` times, the runs of the systems interleaved."""
    cells = [LatencyCell(s) for s in systems]
    for rep in range(runs):
        for cell in cells:
            result = run_latency(env, cell.system, count, gap, timeout=30.0)
            cell.runs.append(result)
            v = result.values_ms
            if v:
                print(
                    f"run {rep + 1}/{runs}  latency {cell.system.label}:"
                    f" p50 {percentile(v, 50):.2f} ms, p99 {percentile(v, 99):.2f} ms,"
                    f" max {max(v):.2f} ms, missing {result.missing}",
                    flush=True,
                )
    return cells


def render_latency(cells: list[LatencyCell], count: int, gap: tuple[float, float]) -> list[str]:
    lines = [
        "## Wake latency: commit → handler start, at idle",
        "",
        "| system | runs | p50 ms | p90 ms | p99 ms | p99 range | max ms | min ms | missing |"
        " p50 / p99 when < 50 ms after the previous write (n) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in cells:
        values = [v for r in c.runs for v in r.values_ms]
        missing = sum(r.missing for r in c.runs)
        p50, p90, p99 = c.percentile(50), c.percentile(90), c.percentile(99)
        if not values or p50 is None or p90 is None or p99 is None:
            lines.append(
                f"| {c.system.label} | {len(c.runs)} | — | — | — | — | — | — | {missing} | — |"
            )
            continue
        s = [v for r in c.runs for v in r.short_gap_ms]
        short = f"{percentile(s, 50):.2f} / {percentile(s, 99):.2f} ({len(s)})" if s else "— (0)"
        p99s = c.per_run(99)
        lines.append(
            f"| {c.system.label} | {len(c.runs)} | {p50:.2f} | {p90:.2f} | {p99:.2f}"
            f" | {min(p99s):.2f}-{max(p99s):.2f} | {max(values):.2f} | {min(values):.2f}"
            f" | {missing} | {short} |"
        )
    lines += [
        "",
        f"{count} writes per system and run (the first {WARMUP_EVENTS} not counted), one at a"
        f" time, a uniform random gap of {gap[0]:g}-{gap[1]:g} ms between them; one worker"
        " process. p50/p90/p99 = the median over the runs of each run's percentile; max, min"
        " and the short-gap figures pool every run's events."
        " Commit = time.time() when the write call returned (its COMMIT acknowledged);"
        " handler start = time.time() the handler wrote as its first act. A negative"
        " minimum means the worker was woken before the writer's client saw its commit"
        " acknowledged (NOTIFY sent at commit by a trigger).",
    ]
    return lines
