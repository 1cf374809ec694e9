"""Processing: backlog throughput, wake latency and scale, pg-inbox beside procrastinate and
PGQueuer, on one server.

    python -m benchmarks.processing                  # all three figures (~30-40 min on 2 cores)
    python -m benchmarks.processing --quick          # a smoke run (~2-3 min)
    python -m benchmarks.processing --figures throughput --backlog 20000
    python -m benchmarks.processing --figures sweep  # the peers' configurations, side by side

The peers run from their own virtual environment (``--peers-python``, default
``/work/peers-venv/bin/python``; ``python3 -m venv /work/peers-venv && /work/peers-venv/bin/pip
install 'procrastinate==3.10.*' 'pgqueuer==1.6.*' 'psycopg[binary]' asyncpg``) through
``benchmarks/_peer_worker.py``; a peer that is not installed is skipped with a note.

**Throughput.** A backlog of --backlog events (default 50,000) is loaded before any worker
starts; then 1 or 2 worker processes drain it. pg-inbox: ``inbox worker --app
benchmarks._apps:noop|business --concurrency N`` processes; its backlog is loaded with one
set-based ``INSERT … SELECT generate_series`` into ``inbox_events`` + ``inbox_work`` (the
writer's tables and columns, ~1 KB JSON bodies; not through the writer, which the ingest
benchmark measures). Peers: their own bulk-enqueue APIs (``Queries.enqueue`` with lists,
``Task.batch_defer_async``) and worker APIs (``QueueManager.run``, ``App.run_worker_async``)
with a no-op job. Every database is ANALYZEd after the load. The driver polls the number of
unfinished rows every --poll-ms; the clock starts at the first poll that sees fewer rows than
the backlog (so interpreter start, imports and connecting are excluded; so is the first
batch's work, which is why the rate is counted over the rows finished after that poll) and
stops at the first poll that sees none. "start→empty" is the whole wall time from spawning
the workers, start-up included.

**Wake latency.** At idle, --events writes one at a time with a uniform random gap of
--gap-ms between them. pg-inbox: ``AsyncInboxWriter`` (default ``notify="after_commit"``) in
this process, one ``inbox worker`` woken by LISTEN/NOTIFY. Peers: one enqueue per transaction
from a separate process through their own API, one worker. Each write's commit time is
``time.time()`` when the write call returned; the handler appends ``time.time()`` when it
starts; both on this machine's clock. The first 5 events of each system are warm-up and
not counted.

**Scale.** With 1,000 vs 1,000,000 rows of history (inbox_events + one inbox_attempts row
each, loaded set-based), a backlog of --scale-backlog events: the claim's latency (the
product's ``WorkStore.claim`` of a 100-event batch, timed from the client, rolled back; and the
server's EXPLAIN ANALYZE execution time of ``claim_batch``), then one worker's drain rate.
Worker RSS: one ``inbox worker`` process's VmRSS at idle, during, and after draining
--rss-events events.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import platform
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from benchmarks._apps import BUSINESS_TABLE_DDL
from benchmarks._common import (
    OUT_DIR,
    REPO,
    child_env,
    create_database,
    drop_database,
    fresh_database,
    loadavg,
    median,
    percentile,
    postgres_server,
    redact,
    server_facts,
)
from benchmarks.ingest import make_body, make_headers
from inbox import AsyncInboxWriter, _migrate

PEER_SCRIPT = Path(__file__).resolve().parent / "_peer_worker.py"
DEFAULT_PEERS_PYTHON = "/work/peers-venv/bin/python"
EVENT_TYPE = "invoice.paid"
WARMUP_EVENTS = 5


# --- the systems ----------------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    """One thing that drains a queue: pg-inbox with a handler, or a peer configuration."""

    name: str  # inbox-noop | inbox-business | pgqueuer-psycopg | pgqueuer-asyncpg | procrastinate
    batch_size: int = 0  # pgqueuer batch_size
    concurrency: int = 1  # pg-inbox --concurrency; procrastinate concurrency; pgq max tasks

    @property
    def family(self) -> str:
        return self.name.split("-")[0]

    @property
    def label(self) -> str:
        if self.family == "inbox":
            handler = "no-op" if self.name == "inbox-noop" else "1 business INSERT"
            return f"pg-inbox, {handler} (--concurrency {self.concurrency})"
        if self.family == "pgqueuer":
            driver = self.name.split("-")[1]
            limit = f", max_concurrent_tasks={self.concurrency}" if self.concurrency > 1 else ""
            return f"PGQueuer {driver}, batch_size={self.batch_size}{limit}"
        return f"procrastinate, concurrency={self.concurrency}"

    @property
    def remaining_sql(self) -> str:
        if self.family == "inbox":
            return "select count(*) from inbox_work"
        if self.family == "pgqueuer":
            return "select count(*) from pgqueuer"
        return "select count(*) from procrastinate_jobs where status in ('todo', 'doing')"


def parse_system(text: str) -> System:
    """``name[:b=N][:c=N]``, e.g. ``pgqueuer-asyncpg:b=100`` or ``procrastinate:c=20``."""
    name, *opts = text.split(":")
    kwargs: dict[str, int] = {}
    for opt in opts:
        key, _, value = opt.partition("=")
        kwargs[{"b": "batch_size", "c": "concurrency"}[key]] = int(value)
    if name.startswith("pgqueuer"):
        kwargs.setdefault("batch_size", 10)
        kwargs.setdefault("concurrency", 0)
    return System(name, **kwargs)


@dataclass
class Env:
    server: str
    templates: dict[str, str]  # family -> template database name
    peers_python: str | None
    poll: float
    logs: Path


def worker_command(env: Env, system: System, url: str, record: str | None = None) -> list[str]:
    if system.family == "inbox":
        app = {"inbox-noop": "noop", "inbox-business": "business"}.get(system.name, "noop")
        if record:
            app = "latency"
        return [
            sys.executable,
            "-m",
            "inbox",
            "worker",
            "--app",
            f"benchmarks._apps:{app}",
            "--concurrency",
            str(system.concurrency),
        ]
    assert env.peers_python is not None
    family, _, driver = system.name.partition("-")
    cmd = [env.peers_python, str(PEER_SCRIPT), "work", family, url]
    if family == "pgqueuer":
        cmd += ["--driver", driver, "--batch-size", str(system.batch_size)]
        if system.concurrency:
            cmd += ["--concurrency", str(system.concurrency)]
    else:
        cmd += ["--concurrency", str(system.concurrency)]
    if record:
        cmd += ["--record", record]
    return cmd


def spawn(env: Env, cmd: list[str], url: str, tag: str, **extra: str) -> subprocess.Popen[bytes]:
    # The child keeps its own copy of the log's descriptor; ours is closed at once.
    with (env.logs / f"{tag}.log").open("ab") as log:
        return subprocess.Popen(
            cmd,
            env=child_env(url, **extra),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # our SIGINT is ours; the driver stops workers itself
        )


def stop(procs: Sequence[subprocess.Popen[bytes]], timeout: float = 20.0) -> list[int]:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    return codes


def peer(env: Env, *args: str) -> None:
    assert env.peers_python is not None
    subprocess.run(
        [env.peers_python, str(PEER_SCRIPT), *args],
        check=True,
        capture_output=True,
        cwd=REPO,
    )


# --- loading --------------------------------------------------------------------------------

LOAD_BACKLOG = """
with ev as (
    insert into inbox_events (source, idempotency_key, event_type, headers, body, body_sha256)
    select 'bench', %(tag)s || '-' || g, %(event_type)s, %(headers)s::jsonb, b.body,
           sha256(b.body)
    from generate_series(1, %(n)s) as g, (select %(body)s::bytea as body) as b
    order by g
    returning id
)
insert into inbox_work (event_id) select id from ev
"""

LOAD_HISTORY = """
with ev as (
    insert into inbox_events
        (source, idempotency_key, event_type, headers, body, body_sha256, received_at)
    select 'history', 'h-' || g, %(event_type)s, '{}'::jsonb, b.body, sha256(b.body),
           now() - interval '30 days' + g * interval '1 ms'
    from generate_series(1, %(n)s) as g, (select %(body)s::bytea as body) as b
    order by g
    returning id, received_at
)
insert into inbox_attempts
    (event_id, attempt, started_at, finished_at, outcome, handler, worker)
select id, 1, received_at, received_at + interval '2 ms', 'processed', 'bench.history',
       'history:1/0'
from ev
"""


def load_inbox_backlog(url: str, n: int, *, notify: bool = False) -> None:
    import json

    key = "evt_0000000000000000000000"
    with psycopg.connect(url) as conn:
        conn.execute(
            LOAD_BACKLOG,
            {
                "tag": f"b{random.getrandbits(32):08x}",
                "n": n,
                "event_type": EVENT_TYPE,
                "headers": json.dumps(make_headers(key)),
                "body": make_body(key),
            },
        )
        if notify:
            conn.execute("select pg_notify('inbox_work', '')")
    analyze(url)


def load_history(url: str, n: int) -> None:
    body = make_body("h")[:200]
    with psycopg.connect(url) as conn:
        conn.execute(LOAD_HISTORY, {"n": n, "event_type": EVENT_TYPE, "body": body})
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("vacuum analyze")


def analyze(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("analyze")


def load_backlog(env: Env, system: System, url: str, n: int) -> None:
    if system.family == "inbox":
        load_inbox_backlog(url, n)
    else:
        peer(env, "enqueue", system.family, url, str(n))
        analyze(url)


def remaining(conn: psycopg.Connection, system: System) -> int:  # type: ignore[type-arg]
    row = conn.execute(system.remaining_sql).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


# --- figure 1: throughput -------------------------------------------------------------------


@dataclass
class Drain:
    rate: float  # events/s from the first observed progress to empty
    total: float  # seconds from spawning the workers to empty
    startup: float  # seconds from spawning to the first observed progress
    ok: bool
    note: str = ""


def drain(
    env: Env,
    system: System,
    url: str,
    backlog: int,
    processes: int,
    *,
    timeout: float,
    on_progress: Callable[[int, list[subprocess.Popen[bytes]]], None] | None = None,
    tag: str = "drain",
) -> Drain:
    """Start the workers on a loaded backlog and time them to an empty queue."""
    with psycopg.connect(url, autocommit=True) as conn:
        spawned = time.monotonic()
        procs = [
            spawn(env, worker_command(env, system, url), url, f"{tag}-{system.name}-{i}")
            for i in range(processes)
        ]
        first_at: float | None = None
        first_left = backlog
        left = backlog
        note = ""
        try:
            while True:
                now = time.monotonic()
                left = remaining(conn, system)
                if on_progress is not None:
                    on_progress(left, procs)
                if first_at is None and left < backlog:
                    first_at, first_left = now, left
                if left == 0:
                    break
                if now - spawned > timeout or (first_at is None and now - spawned > 60):
                    note = f"timeout with {left} left"
                    break
                dead = [p.returncode for p in procs if p.poll() is not None]
                if dead:
                    note = f"worker exited {dead}"
                    break
                time.sleep(env.poll)
            done_at = time.monotonic()
        finally:
            codes = stop(procs)
        if any(c not in (0, -signal.SIGTERM) for c in codes) and not note:
            note = f"exit codes {codes}"
    if first_at is None or left:
        return Drain(0.0, done_at - spawned, 0.0, False, note or "no progress")
    counted = first_left
    span = max(done_at - first_at, 1e-6)
    return Drain(counted / span, done_at - spawned, first_at - spawned, not note, note)


def check_inbox_result(url: str, system: System, backlog: int) -> str:
    if system.family != "inbox":
        return ""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "select (select count(*) from inbox_attempts where outcome = 'processed'),"
            " (select count(*) from bench_business)"
        ).fetchone()
    assert row is not None
    attempts, business = int(row[0]), int(row[1])
    wrong = []
    if attempts != backlog:
        wrong.append(f"attempts={attempts}")
    if system.name == "inbox-business" and business != backlog:
        wrong.append(f"business rows={business}")
    return ", ".join(wrong)


@dataclass
class Cell:
    system: System
    processes: int
    runs: list[Drain] = field(default_factory=list)

    def rates(self) -> list[float]:
        return [r.rate for r in self.runs if r.ok]

    def median_rate(self) -> float:
        rates = self.rates()
        return median(rates) if rates else 0.0


def run_throughput(
    env: Env, systems: list[System], procs: list[int], backlog: int, runs: int, timeout: float
) -> list[Cell]:
    cells = [Cell(s, p) for p in procs for s in systems]
    for rep in range(runs):
        for cell in cells:
            s = cell.system
            with fresh_database(env.server, env.templates[s.family]) as url:
                load_backlog(env, s, url, backlog)
                load1 = loadavg().split()[0]
                result = drain(env, s, url, backlog, cell.processes, timeout=timeout)
                bad = check_inbox_result(url, s, backlog) if result.ok else ""
                if bad:
                    result.ok, result.note = False, bad
            cell.runs.append(result)
            print(
                f"run {rep + 1}/{runs}  {cell.processes} proc x {s.label:<52}"
                f" {result.rate:>8,.0f}/s  start->empty {result.total:6.1f} s"
                f"  (startup {result.startup:.2f} s, load1 {load1})"
                f"{'  ' + result.note if result.note else ''}",
                flush=True,
            )
    return cells


def render_throughput(cells: list[Cell], backlog: int, runs: int) -> list[str]:
    lines = [
        f"## Processing throughput: {backlog:,}-event backlog",
        "",
        "| procs | system | events/s (median) | range | start→empty s (median) | vs pg-inbox (b) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for p in sorted({c.processes for c in cells}):
        group = [c for c in cells if c.processes == p]
        ref = next((c.median_rate() for c in group if c.system.name == "inbox-business"), 0.0)
        for c in group:
            rates = c.rates()
            med = c.median_rate()
            rng = f"{min(rates):,.0f}-{max(rates):,.0f}" if rates else "—"
            total = median([r.total for r in c.runs]) if c.runs else 0.0
            ratio = f"{ref / med:.2f}x" if ref and med and c.system.family != "inbox" else "—"
            failed = len(c.runs) - len(rates)
            extra = f" ({failed} failed)" if failed else ""
            lines.append(
                f"| {p} | {c.system.label} | {med:,.0f}{extra} | {rng} | {total:.1f} | {ratio} |"
            )
    lines += [
        "",
        f"{runs} run(s) per cell, a fresh database per run, cells interleaved. 'vs pg-inbox (b)'"
        " = pg-inbox with its business INSERT ÷ the peer, same process count (>1 means"
        " pg-inbox is faster). Rate = rows finished after the first poll that saw progress ÷"
        " the time from that poll to the poll that saw none (start-up excluded);"
        " start→empty includes interpreter start-up and connecting.",
    ]
    return lines


# --- figure 2: wake latency -----------------------------------------------------------------


def read_times(path: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, stamp = line.partition(" ")
            if stamp:
                out.setdefault(key, float(stamp))
    return out


async def _inbox_writes(url: str, count: int, gap: tuple[float, float], out: Path) -> None:
    writer = AsyncInboxWriter(url)
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
    env: Env, system: System, count: int, gap: tuple[float, float], timeout: float
) -> Latency:
    with (
        fresh_database(env.server, env.templates[system.family]) as url,
        tempfile.TemporaryDirectory(prefix="inbox-bench-lat-") as tmp,
    ):
        record, commits_path = Path(tmp) / "handled", Path(tmp) / "committed"
        record.touch()
        cmd = worker_command(env, system, url, record=str(record))
        proc = spawn(env, cmd, url, f"latency-{system.name}", INBOX_BENCH_RECORD=str(record))
        try:
            time.sleep(3.0)  # connected and idle (LISTEN issued), first sweep done
            if system.family == "inbox":
                asyncio.run(_inbox_writes(url, count, gap, commits_path))
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


def render_latency(results: list[Latency], count: int, gap: tuple[float, float]) -> list[str]:
    lines = [
        "## Wake latency: commit → handler start, at idle",
        "",
        "| system | events | p50 ms | p90 ms | p99 ms | max ms | min ms | missing |"
        " p50 / p99 when < 50 ms after the previous write (n) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        v = r.values_ms
        if not v:
            lines.append(f"| {r.system.label} | 0 | — | — | — | — | — | {r.missing} | — |")
            continue
        s = r.short_gap_ms
        short = f"{percentile(s, 50):.2f} / {percentile(s, 99):.2f} ({len(s)})" if s else "— (0)"
        lines.append(
            f"| {r.system.label} | {len(v)} | {percentile(v, 50):.2f} | {percentile(v, 90):.2f}"
            f" | {percentile(v, 99):.2f} | {max(v):.2f} | {min(v):.2f} | {r.missing} | {short} |"
        )
    lines += [
        "",
        f"{count} writes per system (the first {WARMUP_EVENTS} not counted), one at a time, a"
        f" uniform random gap of {gap[0]:g}-{gap[1]:g} ms between them; one worker process."
        " Commit = time.time() when the write call returned (its COMMIT acknowledged);"
        " handler start = time.time() the handler wrote as its first act. A negative"
        " minimum means the worker was woken before the writer's client saw its commit"
        " acknowledged (NOTIFY sent at commit by a trigger).",
    ]
    return lines


# --- figure 3: scale ------------------------------------------------------------------------


async def _claim_latency(url: str, reps: int) -> tuple[list[float], float, bool]:
    from processors._store import CLAIM_BATCH, WorkStore

    store = WorkStore()
    times = []
    async with await psycopg.AsyncConnection.connect(url) as conn:
        for _ in range(reps):
            t0 = time.perf_counter()
            batch = await store.claim(conn, 100)
            times.append((time.perf_counter() - t0) * 1000)
            assert len(batch) == 100, len(batch)
            await conn.rollback()
        cur = await conn.execute(
            "explain (analyze, buffers, format json) " + CLAIM_BATCH,  # type: ignore[operator]
            {"batch_size": 100},
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
        create_database(env.server, tpl, env.templates["inbox"])
        try:
            load_history(with_db(env.server, tpl), history)
            print(f"history of {history:,} loaded in {time.monotonic() - t0:.1f} s", flush=True)
            row = ScaleRow(history)
            for rep in range(runs):
                with fresh_database(env.server, tpl) as url:
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


def with_db(server: str, name: str) -> str:
    from benchmarks._common import with_dbname

    return with_dbname(server, name)


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
    with fresh_database(env.server, env.templates["inbox"]) as url:
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
            "| history rows (events + attempts) | claim of 100, client ms (median) | range"
            " | server EXPLAIN ANALYZE ms (median) | partial index used"
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
            f" top; {runs} run(s). Claim = the product's WorkStore.claim (suspect query, then"
            " the batch claim) for 100 events, timed from the client, rolled back, median of the"
            " repetitions; the server figure is EXPLAIN ANALYZE of claim_batch.",
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


# --- the whole benchmark --------------------------------------------------------------------


def peer_versions(peers_python: str | None) -> str:
    if not peers_python:
        return "peers not installed"
    code = (
        "import importlib.metadata as m;"
        "print(', '.join(f'{p} {m.version(p)}' for p in"
        " ('procrastinate', 'pgqueuer', 'psycopg', 'asyncpg')))"
    )
    done = subprocess.run([peers_python, "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()


def make_templates(server: str, peers_python: str | None, families: set[str]) -> dict[str, str]:
    templates: dict[str, str] = {}
    tag = f"{random.getrandbits(32):08x}"
    if "inbox" in families:
        name = f"inbox_bench_tpl_{tag}"
        url = create_database(server, name)
        templates["inbox"] = name
        _migrate.upgrade(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(BUSINESS_TABLE_DDL)  # type: ignore[arg-type]
    for family in ("pgqueuer", "procrastinate"):
        if family in families and peers_python:
            name = f"inbox_bench_tpl_{family}_{tag}"
            url = create_database(server, name)
            templates[family] = name
            subprocess.run(
                [peers_python, str(PEER_SCRIPT), "install", family, url],
                check=True,
                capture_output=True,
            )
    return templates


@contextlib.contextmanager
def templates_of(server: str, peers_python: str | None, families: set[str]) -> Iterator[dict]:
    templates = make_templates(server, peers_python, families)
    try:
        yield templates
    finally:
        for name in templates.values():
            drop_database(server, name)


DEFAULT_THROUGHPUT = (
    "inbox-noop,inbox-business,pgqueuer-psycopg:b=200,pgqueuer-asyncpg:b=200,procrastinate:c=10"
)
DEFAULT_LATENCY = "inbox-noop,pgqueuer-psycopg,pgqueuer-asyncpg,procrastinate:c=1"
DEFAULT_SWEEP = (
    "inbox-noop:c=1,inbox-noop:c=2,inbox-noop:c=4,"
    "pgqueuer-psycopg:b=10,pgqueuer-psycopg:b=50,pgqueuer-psycopg:b=200,"
    "pgqueuer-asyncpg:b=10,pgqueuer-asyncpg:b=50,pgqueuer-asyncpg:b=200,"
    "procrastinate:c=1,procrastinate:c=10,procrastinate:c=50"
)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.processing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="a smoke run at small sizes")
    p.add_argument(
        "--figures",
        default="throughput,latency,scale",
        help="comma-separated: throughput, latency, scale, rss, sweep (scale includes rss)",
    )
    p.add_argument("--backlog", type=int, default=50_000)
    p.add_argument("--processes", default="1,2", help="worker process counts")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--systems", default=DEFAULT_THROUGHPUT, help="throughput configurations")
    p.add_argument("--latency-systems", default=DEFAULT_LATENCY)
    p.add_argument("--sweep-systems", default=DEFAULT_SWEEP)
    p.add_argument("--sweep-backlog", type=int, default=10_000)
    p.add_argument("--events", type=int, default=2_000, help="wake-latency writes per system")
    p.add_argument("--gap-ms", default="20-80", help="wake latency: gap between writes, ms")
    p.add_argument("--histories", default="1000,1000000")
    p.add_argument("--scale-backlog", type=int, default=20_000)
    p.add_argument("--claim-reps", type=int, default=30)
    p.add_argument("--rss-events", type=int, default=200_000)
    p.add_argument("--poll-ms", type=float, default=50.0)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per drain, at most")
    p.add_argument("--peers-python", default=os.environ.get("INBOX_BENCH_PEERS_PYTHON"))
    p.add_argument("--out", type=Path, default=OUT_DIR / "processing.md")
    args = p.parse_args(argv)
    if args.quick:
        args.backlog, args.runs, args.events = 2_000, 1, 200
        args.histories, args.scale_backlog, args.rss_events = "1000,100000", 2_000, 5_000
        args.sweep_backlog, args.claim_reps = 2_000, 10
    if args.peers_python is None and Path(DEFAULT_PEERS_PYTHON).exists():
        args.peers_python = DEFAULT_PEERS_PYTHON
    lo, _, hi = args.gap_ms.partition("-")
    args.gap = (float(lo), float(hi or lo))
    return args


def _systems(text: str, peers_python: str | None) -> list[System]:
    out = [parse_system(s) for s in text.split(",") if s.strip()]
    return [s for s in out if s.family == "inbox" or peers_python]


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    warnings.filterwarnings("ignore", category=UserWarning, module="platformdirs")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    figures = {f.strip() for f in args.figures.split(",") if f.strip()}
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "benchmarks.processing"])
    command += "".join(f" {shlex.quote(a)}" for a in argv)
    env_url = os.environ.get("INBOX_BENCH_DATABASE_URL")
    if env_url:
        command = f"INBOX_BENCH_DATABASE_URL={shlex.quote(redact(env_url))} {command}"
    throughput = _systems(args.systems, args.peers_python)
    latency = _systems(args.latency_systems, args.peers_python)
    sweep = _systems(args.sweep_systems, args.peers_python)
    families = {"inbox"} | {s.family for s in [*throughput, *latency, *sweep]}
    started = time.monotonic()
    load_before = loadavg()
    sections: list[str] = []
    with (
        postgres_server() as (server, where),
        tempfile.TemporaryDirectory(prefix="inbox-bench-logs-") as logs,
    ):
        facts = server_facts(server)
        header = [
            "# pg-inbox processing benchmark",
            "",
            f"- date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
            f"- command: `PYTHONPATH=. {command}`",
            f"- machine: {platform.node()}, nproc={os.cpu_count()}, {platform.machine()},"
            f" Python {platform.python_version()}, psycopg {psycopg.__version__}",
            f"- server: PostgreSQL {facts['server_version']} ({where});"
            f" synchronous_commit={facts['synchronous_commit']}, fsync={facts['fsync']},"
            f" shared_buffers={facts['shared_buffers']}",
            f"- peers ({args.peers_python}): {peer_versions(args.peers_python)}",
        ]
        print("\n".join(header), flush=True)
        with templates_of(server, args.peers_python, families) as templates:
            env = Env(server, templates, args.peers_python, args.poll_ms / 1000, Path(logs))
            if "sweep" in figures:
                cells = run_throughput(env, sweep, [1, 2], args.sweep_backlog, 1, args.timeout)
                lines = render_throughput(cells, args.sweep_backlog, 1)
                lines[0] = f"## Configuration sweep: {args.sweep_backlog:,}-event backlog, 1 run"
                sections.append("\n".join(lines))
                print(sections[-1], flush=True)
            if "throughput" in figures:
                procs = [int(x) for x in args.processes.split(",")]
                cells = run_throughput(
                    env, throughput, procs, args.backlog, args.runs, args.timeout
                )
                sections.append("\n".join(render_throughput(cells, args.backlog, args.runs)))
                print(sections[-1], flush=True)
            if "latency" in figures:
                results = []
                for s in latency:
                    results.append(run_latency(env, s, args.events, args.gap, timeout=30.0))
                    v = results[-1].values_ms
                    if v:
                        print(
                            f"latency {s.label}: p50 {percentile(v, 50):.2f} ms,"
                            f" p99 {percentile(v, 99):.2f} ms, max {max(v):.2f} ms,"
                            f" missing {results[-1].missing}",
                            flush=True,
                        )
                sections.append("\n".join(render_latency(results, args.events, args.gap)))
                print(sections[-1], flush=True)
            scale_rows: list[ScaleRow] = []
            rss = None
            if "scale" in figures:
                histories = [int(x) for x in args.histories.split(",")]
                scale_rows = run_scale(
                    env, histories, args.scale_backlog, args.runs, args.claim_reps, args.timeout
                )
            if "scale" in figures or "rss" in figures:
                rss = run_rss(env, args.rss_events, args.timeout * 4)
            if scale_rows or rss:
                lines = render_scale(scale_rows, rss, args.scale_backlog, args.runs)
                sections.append("\n".join(lines))
                print(sections[-1], flush=True)
    header.append(
        f"- load average (1/5/15 min): {load_before} before, {loadavg()} after;"
        f" wall time {time.monotonic() - started:.0f} s (2 shared cores: other engineers'"
        " test suites run beside this)"
    )
    text = "\n".join(header) + "\n\n" + "\n\n".join(sections) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
