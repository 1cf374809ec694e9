"""Ordered processing: an ordered source's backlog beside the same backlog unordered, in one
run, on one server.

    python -m benchmarks ordering                    # 3 runs per cell (~5 min on 2 cores)
    python -m benchmarks ordering --runs 1 --backlog 5000 --hot-backlog 1000   # a smoke run

A backlog of --backlog events is loaded set-based before any worker starts (as in
``benchmarks.processing``: ~1 KB bodies, the writer's tables and columns), then
--processes ``inbox worker --app benchmarks._apps:business --concurrency 2`` processes
drain it. Three cells, interleaved in each run, a fresh database each:

- **unordered**: the events have no ordering key (today's path);
- **1,000 keys**: every event has one of 1,000 ordering keys, round robin, ordered by
  arrival (each key's events are claimed one at a time, in order);
- **10 hot keys**: --hot-backlog events over 10 keys: at most 10 events can run at once.

The rate is timed as in ``benchmarks.processing`` (rows finished after the first poll that
saw progress ÷ the time to the poll that saw none). For the hot keys, each key's own rate and
its step latency: the time between one event of a key settling and the next one settling,
from ``inbox_attempts.finished_at`` (the server's clock).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from benchmarks import _common as common
from benchmarks._apps import BUSINESS_TABLE_DDL
from benchmarks._payloads import make_body, make_headers
from benchmarks._report_frame import Driver
from benchmarks._systems import stop
from inbox.testing import new_database

LOAD = """
with keyed as (
    -- As the writer appends: the key first, which draws the id.
    insert into inbox_keys (source, idempotency_key, body_sha256)
    select 'bench', 'o-' || g, sha256(%(body)s::bytea)
    from generate_series(1, %(n)s) as g
    order by g
    returning event_id, received_at, source, idempotency_key
),
ev as (
    insert into inbox_events
        (id, received_at, source, idempotency_key, event_type, headers, body, body_sha256,
         ordering_key, order_at, on_dead)
    select k.event_id, k.received_at, k.source, k.idempotency_key, 'invoice.paid',
           %(headers)s::jsonb, %(body)s::bytea, sha256(%(body)s::bytea),
           case when %(keys)s::int > 0
                then 'key-' || (substr(k.idempotency_key, 3)::int %% %(keys)s::int) end,
           case when %(keys)s::int > 0
                then now() + substr(k.idempotency_key, 3)::int * interval '1 us' end,
           case when %(keys)s::int > 0 then 'hold' end
    from keyed k
    order by k.event_id
    returning id, received_at, source, ordering_key, order_at, on_dead
)
insert into inbox_work (event_id, received_at, source, ordering_key, order_at, on_dead)
select id, received_at, case when ordering_key is not null then source end, ordering_key,
       order_at, on_dead
from ev
"""

# Per hot key: its events' settle times in order, as gaps (seconds) and its own rate.
KEY_STEPS = """
select ordering_key,
       extract(epoch from a.finished_at - lag(a.finished_at) over w)::float8 as step,
       extract(epoch from max(a.finished_at) over k - min(a.finished_at) over k)::float8 as span,
       count(*) over k as n
from inbox_attempts a
join inbox_events e on e.id = a.event_id and e.received_at = a.received_at
where a.outcome = 'processed'
window w as (partition by e.ordering_key order by a.finished_at),
       k as (partition by e.ordering_key)
"""


@dataclass
class Cell:
    label: str
    keys: int
    backlog: int
    rates: list[float] = field(default_factory=list)
    key_rates: list[float] = field(default_factory=list)
    steps_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _load(url: str, keys: int, n: int) -> None:
    import json

    key = "evt_0000000000000000000000"
    with psycopg.connect(url) as conn:
        conn.execute(BUSINESS_TABLE_DDL)
        conn.execute(
            LOAD,
            {
                "keys": keys,
                "n": n,
                "headers": json.dumps(make_headers(key)),
                "body": make_body(key),
            },
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")


def _spawn(cmd: list[str], url: str, log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("ab") as log:
        return subprocess.Popen(
            cmd,
            env=common.child_env(url),
            cwd=common.REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _drain(url: str, logs: Path, n: int, processes: int, poll: float, tag: str) -> float:
    """Events per second, or raises when the workers could not drain the backlog."""
    cmd = [sys.executable, "-m", "inbox", "worker", "--app", "benchmarks._apps:business"]
    cmd += ["--concurrency", "2"]
    with psycopg.connect(url, autocommit=True) as conn:
        procs = [_spawn(cmd, url, logs / f"{tag}-{i}.log") for i in range(processes)]
        try:
            first_at: float | None = None
            first_left = n
            while True:
                row = conn.execute("select count(*) from inbox_work").fetchone()
                left, now = int(row[0]) if row else 0, time.monotonic()
                if first_at is None and left < n:
                    first_at, first_left = now, left
                if left == 0:
                    break
                if any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"a worker exited; see {logs}")
                time.sleep(poll)
            done_at = time.monotonic()
        finally:
            stop(procs)
    assert first_at is not None
    return first_left / max(done_at - first_at, 1e-6)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class OrderingResult:
    cells: list[Cell]  # unordered first: the others are compared with it
    processes: int
    runs: int

    def vs_unordered(self, cell: Cell) -> float:
        base = common.median(self.cells[0].rates)
        return common.median(cell.rates) / base if base else 0.0


def measure(server: str, args: argparse.Namespace, logs: Path) -> OrderingResult:
    """The three cells, ``--runs`` times each, interleaved, a fresh database per run."""
    from inbox._core.database import migrate

    cells = [
        Cell("unordered", 0, args.backlog),
        Cell("1,000 keys", 1000, args.backlog),
        Cell("10 hot keys", 10, args.hot_backlog),
    ]
    poll = args.poll_ms / 1000
    for rep in range(args.runs):
        for cell in cells:
            with new_database(server) as url:
                migrate.upgrade(url)
                _load(url, cell.keys, cell.backlog)
                load1 = common.loadavg().split()[0]
                rate = _drain(url, logs, cell.backlog, args.processes, poll, f"{cell.label}-{rep}")
                cell.rates.append(rate)
                with psycopg.connect(url) as conn:
                    done = conn.execute("select count(*) from bench_business").fetchone()
                    if done != (cell.backlog,):
                        cell.notes.append(f"run {rep + 1}: {done} business rows")
                    if cell.keys and cell.keys <= 10:
                        for _, step, span, count in conn.execute(KEY_STEPS).fetchall():
                            if step is not None:
                                cell.steps_ms.append(step * 1000)
                            if span:
                                cell.key_rates.append((count - 1) / span)
            print(
                f"run {rep + 1}/{args.runs}  {cell.label:<12} {rate:>8,.0f}/s  (load1 {load1})",
                flush=True,
            )
    return OrderingResult(cells, args.processes, args.runs)


def render(result: OrderingResult) -> list[str]:
    cells = result.cells
    lines = [
        "## Ordered processing: one source, ordered by key, beside the same backlog unordered",
        "",
        "| source | keys | backlog | events/s (median) | range | ÷ unordered |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for cell in cells:
        rate = common.median(cell.rates)
        lines.append(
            f"| {cell.label} | {cell.keys or '—'} | {cell.backlog:,} | {rate:,.0f}"
            f" | {min(cell.rates):,.0f}-{max(cell.rates):,.0f}"
            f" | {result.vs_unordered(cell):.2f} |"
        )
    unordered, keyed = cells[0].rates, cells[1].rates
    per_run = ", ".join(f"{k / u:.2f}" for u, k in zip(unordered, keyed, strict=True) if u)
    lines += ["", f"Per run, {cells[1].label} ÷ unordered: {per_run} (a run's cells side by side)."]
    for cell in (c for c in cells if c.steps_ms):
        lines.append(
            f"{cell.label}: per key {common.median(cell.key_rates):,.0f} events/s (median over keys"
            f" and runs); step latency (one event of a key settled → the next settled, server"
            f" clock) p50 {_percentile(cell.steps_ms, 0.5):.1f} ms, p99"
            f" {_percentile(cell.steps_ms, 0.99):.1f} ms."
        )
    lines += [
        "",
        f"{result.runs} run(s) per cell, cells interleaved, a fresh database each;"
        f" {result.processes} worker process(es), --concurrency 2, one business INSERT per"
        " event; the backlog loaded set-based before the workers start.",
    ]
    for cell in cells:
        lines += [f"- note ({cell.label}): {n}" for n in cell.notes]
    return lines


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backlog", type=int, default=20_000)
    p.add_argument("--hot-backlog", type=int, default=4_000)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--poll-ms", type=float, default=20.0)


DRIVER = Driver("ordering", __doc__, _options, measure, render)
