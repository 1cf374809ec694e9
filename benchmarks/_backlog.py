"""Figure 5b, backlog size: one worker drains a small and a very large backlog, and its RSS is
sampled on the way. See ``benchmarks.processing`` for what is measured and how.
"""

from __future__ import annotations

import random
import subprocess
import time
from dataclasses import dataclass, field

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from benchmarks._common import median
from benchmarks._loading import load_inbox_backlog
from benchmarks._scale import rss_kb
from benchmarks._systems import Env, System, drain
from inbox.testing import create_database, drop_database

SYSTEM = System("inbox-noop", concurrency=1)


@dataclass
class BacklogRow:
    backlog: int
    rates: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    # Per run: (events done, the worker's RSS kB), every tenth of the backlog.
    rss: list[list[tuple[int, int]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Per run: the server's WAL over the drain, bytes and full-page images, per event.
    wal_bytes: list[float] = field(default_factory=list)
    wal_fpi: list[float] = field(default_factory=list)


class _RssSampler:
    """The drain's progress hook: the worker's RSS every tenth of the backlog, and at the end."""

    def __init__(self, backlog: int) -> None:
        self._backlog = backlog
        self._step = max(1, backlog // 10)
        self.samples: list[tuple[int, int]] = []

    def __call__(self, left: int, procs: list[subprocess.Popen[bytes]]) -> None:
        done = self._backlog - left
        last = self.samples[-1][0] if self.samples else 0
        if done and (not self.samples or done - last >= self._step or left == 0):
            self.samples.append((done, rss_kb(procs[0].pid)))


def _wal(url: str) -> tuple[int, int]:
    """The server's WAL so far (pg_stat_wal, PostgreSQL 14+): bytes, full-page images."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select wal_bytes::bigint, wal_fpi from pg_stat_wal").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _clone(server: str, template: str) -> str:
    """A copy of a loaded backlog: FILE_COPY copies the files (PostgreSQL 15+), where the
    default strategy would write a gigabyte of WAL for the large one."""
    name = f"inbox_bench_{random.getrandbits(48):012x}"
    statement = sql.SQL("create database {} template {} strategy file_copy").format(
        sql.Identifier(name), sql.Identifier(template)
    )
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(statement)
    return name


def run_backlogs(env: Env, sizes: list[int], runs: int, timeout: float) -> list[BacklogRow]:
    """Each size loaded once into a template, then ``runs`` drains of a copy, sizes
    interleaved within each run.

    The templates are vacuumed after the load. Only ANALYZEd, the sizes started in different
    states: ANALYZE's 30,000-row sample reads every page of a 20,000-event backlog, setting
    its hint bits, and 3 % of a 1,000,000-event one, whose drain then set them itself, each
    first write to a page after a checkpoint a full-page image (the embedded PostgreSQL has
    data checksums on): 2.2 KB of WAL an event against 0.85, and more checkpoints. And
    autovacuum sometimes vacuumed the large template between runs, so its later copies
    started as vacuumed (measured: 0.22, 0.08 and 0.015 full-page images an event in three
    runs of one command). Vacuumed, both sizes write the same WAL an event, as a backlog that
    built up over time does once autovacuum has passed over it."""
    templates: dict[int, str] = {}
    try:
        for n in sizes:
            name = f"inbox_bench_backlog_{n}_{random.getrandbits(24):06x}"
            t0 = time.monotonic()
            load_inbox_backlog(
                create_database(env.server, name, template=env.templates["inbox"]), n, vacuum=True
            )
            templates[n] = name
            print(f"backlog of {n:,} loaded in {time.monotonic() - t0:.1f} s", flush=True)
        rows = {n: BacklogRow(n) for n in sizes}
        for rep in range(runs):
            for n in sizes:
                row = rows[n]
                sampler = _RssSampler(n)
                name = _clone(env.server, templates[n])
                try:
                    url = make_conninfo(env.server, dbname=name)
                    wal_before = _wal(url)
                    result = drain(
                        env, SYSTEM, url, n, 1, timeout=timeout, on_progress=sampler, tag="backlog"
                    )
                    wal_after = _wal(url)
                finally:
                    drop_database(env.server, name)
                samples = sampler.samples
                first, last = (samples[0][1], samples[-1][1]) if samples else (0, 0)
                wal_bytes = (wal_after[0] - wal_before[0]) / n
                wal_fpi = (wal_after[1] - wal_before[1]) / n
                if result.ok:
                    row.rates.append(result.rate)
                    row.cpu_us.append(result.cpu_us)
                    row.wal_bytes.append(wal_bytes)
                    row.wal_fpi.append(wal_fpi)
                row.rss.append(samples)
                row.notes.append(result.note)
                print(
                    f"run {rep + 1}/{runs}  backlog {n:>9,}: {result.rate:,.0f}/s"
                    f"  cpu {result.cpu_us:.0f} us/ev  WAL {wal_bytes / 1024:.2f} KB/ev,"
                    f" {wal_fpi:.3f} FPI/ev  RSS {first / 1024:.1f} -> {last / 1024:.1f} MB"
                    f" {result.note}",
                    flush=True,
                )
        return [rows[n] for n in sizes]
    finally:
        for name in templates.values():
            drop_database(env.server, name)


def render_backlogs(rows: list[BacklogRow], runs: int) -> list[str]:
    base = median(rows[0].rates) if rows and rows[0].rates else 0.0
    lines = [
        "## Backlog size: one worker drains a small and a very large backlog",
        "",
        "| backlog | events/s (median) | range | vs smallest | worker CPU µs/event (median)"
        " | server WAL KB/event (median) | full-page images/event (median)"
        " | worker RSS MB, first → last sample (per run) |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        rate = median(r.rates) if r.rates else 0.0
        rng = f"{min(r.rates):,.0f}-{max(r.rates):,.0f}" if r.rates else "—"
        vs = f"{rate / base:.2f}" if base and rate else "—"
        cpu = f"{median(r.cpu_us):.0f}" if r.cpu_us else "—"
        wal = f"{median(r.wal_bytes) / 1024:.2f}" if r.wal_bytes else "—"
        fpi = f"{median(r.wal_fpi):.3f}" if r.wal_fpi else "—"
        rss = "; ".join(
            f"{s[0][1] / 1024:.1f} → {s[-1][1] / 1024:.1f} (max {max(k for _, k in s) / 1024:.1f})"
            for s in r.rss
            if s
        )
        lines.append(
            f"| {r.backlog:,} | {rate:,.0f} | {rng} | {vs} | {cpu} | {wal} | {fpi} | {rss} |"
        )
    lines += [
        "",
        f"One `inbox worker --app benchmarks._apps:noop --concurrency 1` process, {runs} run(s)"
        " per size, sizes interleaved; each backlog loaded once (set-based, ~1 KB bodies, then"
        " VACUUM ANALYZE, as autovacuum leaves a backlog that built up over time: only ANALYZEd,"
        " the small one started with its hint bits set and the large one did not) and copied"
        " per run (CREATE DATABASE … STRATEGY FILE_COPY), so every run starts from the same"
        " files. Rate as in the throughput figure. WAL = the server's pg_stat_wal over the"
        " drain ÷ the backlog (autovacuum's included). RSS = the worker's VmRSS sampled every"
        " tenth of the backlog.",
        "",
    ]
    return lines
