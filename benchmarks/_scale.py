"""Figure 5, scale: the claim's latency as the history grows, and a worker's RSS over many
events. See ``benchmarks.processing`` for what is measured and how.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from benchmarks._common import (
    median,
)
from benchmarks._loading import load_history, load_inbox_backlog
from benchmarks._systems import Env, System, drain, remaining, spawn, stop, worker_command
from inbox.testing import create_database, drop_database, new_database

# The claim measured: a full batch, as a worker takes it (processors._worker.worker.MAX_BATCH).
CLAIM_SIZE = 64


async def _claim_latency(url: str, reps: int) -> tuple[list[float], float, bool]:
    from processors._claiming.cursor import START, claim_params
    from processors._claiming.store import CLAIM_BATCH, WorkStore
    from processors._running.savepoints import BATCH_SAVEPOINT

    store = WorkStore()
    times = []
    async with await psycopg.AsyncConnection.connect(url) as conn:
        for _ in range(reps):
            t0 = time.perf_counter()
            # As a worker's claim loop 0 does: claim a batch, look for a suspect and take
            # the batch's savepoint, in one round trip.
            claim = await store.claim_batch(
                conn, CLAIM_SIZE, look_for_suspect=True, then=BATCH_SAVEPOINT
            )
            times.append((time.perf_counter() - t0) * 1000)
            assert len(claim.batch) == CLAIM_SIZE, len(claim.batch)
            await conn.rollback()
        cur = await conn.execute(
            "explain (analyze, buffers, format json) " + CLAIM_BATCH,  # type: ignore[operator]
            claim_params(CLAIM_SIZE, START),
        )
        row = await cur.fetchone()
        await conn.rollback()
    assert row is not None
    plan = row[0][0]
    text = str(plan)
    return times, float(plan["Execution Time"]), "inbox_work_claim" in text


@dataclass
class ScaleRow:
    history: int
    claim_ms: list[float] = field(default_factory=list)  # per run: median client claim time
    explain_ms: list[float] = field(default_factory=list)
    uses_index: bool = True
    rates: list[float] = field(default_factory=list)


def run_scale(
    env: Env, histories: list[int], backlog: int, runs: int, reps: int, timeout: float
) -> list[ScaleRow]:
    rows = []
    system = System("inbox-noop")
    for history in histories:
        tpl = f"inbox_bench_hist_{history}_{random.getrandbits(24):06x}"
        t0 = time.monotonic()
        tpl_url = create_database(env.server, tpl, template=env.templates["inbox"])
        try:
            load_history(tpl_url, history)
            print(f"history of {history:,} loaded in {time.monotonic() - t0:.1f} s", flush=True)
            row = ScaleRow(history)
            for rep in range(runs):
                with new_database(env.server, template=tpl) as url:
                    load_inbox_backlog(url, backlog)
                    times, explain_ms, uses_index = asyncio.run(_claim_latency(url, reps))
                    result = drain(env, system, url, backlog, 1, timeout=timeout, tag="scale")
                row.claim_ms.append(median(times))
                row.explain_ms.append(explain_ms)
                row.uses_index = row.uses_index and uses_index
                if result.ok:
                    row.rates.append(result.rate)
                print(
                    f"run {rep + 1}/{runs}  history {history:>9,}: claim {median(times):.2f} ms"
                    f" (server {explain_ms:.2f} ms, index={uses_index}),"
                    f" drain {result.rate:,.0f}/s {result.note}",
                    flush=True,
                )
            rows.append(row)
        finally:
            drop_database(env.server, tpl)
    return rows


def rss_kb(pid: int) -> int:
    """VmRSS of a process, kB (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class RssResult:
    events: int
    samples: list[tuple[int, int]]  # (events done, RSS kB)
    rate: float
    note: str


def run_rss(env: Env, events: int, timeout: float) -> RssResult:
    system = System("inbox-noop")
    samples: list[tuple[int, int]] = []
    with new_database(env.server, template=env.templates["inbox"]) as url:
        proc = spawn(env, worker_command(env, system, url), url, "rss")
        try:
            time.sleep(3.0)
            samples.append((0, rss_kb(proc.pid)))  # idle, before any event
            load_inbox_backlog(url, events, notify=True)
            started = time.monotonic()
            step = max(1, events // 10)
            next_mark = events - step
            note = ""
            with psycopg.connect(url, autocommit=True) as conn:
                while True:
                    left = remaining(conn, system)
                    if left <= next_mark or left == 0:
                        samples.append((events - left, rss_kb(proc.pid)))
                        next_mark = left - step
                    if left == 0:
                        break
                    if time.monotonic() - started > timeout:
                        note = f"timeout with {left} left"
                        break
                    time.sleep(0.25)
            elapsed = time.monotonic() - started
            time.sleep(2.0)
            samples.append((events - left, rss_kb(proc.pid)))  # idle again
        finally:
            stop([proc])
    return RssResult(events, samples, (events - left) / elapsed, note)


def render_scale(rows: list[ScaleRow], rss: RssResult | None, backlog: int, runs: int) -> list[str]:
    lines: list[str] = []
    if rows:
        base = rows[0]
        lines += [
            "## Scale: the claim as the history grows",
            "",
            f"| history rows (events + attempts) | claim of {CLAIM_SIZE}, client ms (median)"
            " | range | server EXPLAIN ANALYZE ms (median) | partial index used"
            " | 1-worker drain events/s (median) | range | vs smallest history |",
            "|---:|---:|---:|---:|:-:|---:|---:|---:|",
        ]
        for r in rows:
            rate = median(r.rates) if r.rates else 0.0
            base_rate = median(base.rates) if base.rates else 0.0
            rng = f"{min(r.rates):,.0f}-{max(r.rates):,.0f}" if r.rates else "—"
            crng = f"{min(r.claim_ms):.2f}-{max(r.claim_ms):.2f}"
            vs = f"{rate / base_rate:.2f}" if base_rate and rate else "—"
            lines.append(
                f"| {r.history:,} | {median(r.claim_ms):.2f} | {crng} | {median(r.explain_ms):.2f}"
                f" | {'yes' if r.uses_index else 'NO'} | {rate:,.0f} | {rng} | {vs} |"
            )
        lines += [
            "",
            f"History loaded set-based (one inbox_events row with a 200-byte body + one"
            f" inbox_attempts row per event, then VACUUM ANALYZE); a {backlog:,}-event backlog on"
            f" top; {runs} run(s). Claim = what a worker's claim loop 0 runs: the"
            f" product's WorkStore.claim_batch of {CLAIM_SIZE} events with its suspect check and"
            " savepoint, timed from the client, rolled back, median of the repetitions; the"
            " server figure is EXPLAIN"
            " ANALYZE of claim_batch.",
            "",
        ]
    if rss is not None:
        lines += [
            f"## Worker RSS over {rss.events:,} events (1 process, --concurrency 1, no-op)",
            "",
            "| events processed | RSS MB |",
            "|---:|---:|",
        ]
        for done, kb in rss.samples:
            lines.append(f"| {done:,} | {kb / 1024:.1f} |")
        first, last = rss.samples[0][1], rss.samples[-1][1]
        lines += [
            "",
            f"Idle before: {first / 1024:.1f} MB; idle after: {last / 1024:.1f} MB"
            f" ({(last - first) / 1024:+.1f} MB); drain rate {rss.rate:,.0f}/s."
            f"{' ' + rss.note if rss.note else ''}",
            "",
        ]
    return lines
