"""Library-level ingest: new-event writes/s of the writers beside pgbench's ceiling.

    python -m benchmarks ingest            # ~5-6 minutes: 3 runs x 5 s per configuration
    python -m benchmarks ingest --quick    # a smoke run of a few seconds

What is measured, at 1, 16 and 64 concurrent writers:

- ``AsyncInboxWriter`` (asyncio tasks) and ``InboxWriter`` (threads), each with
  ``notify="after_commit"`` (the default: a coalesced, payload-free NOTIFY after commit) and
  ``notify="in_transaction"`` (NOTIFY inside the inserting statement);
- the ceiling: ``pgbench -n -M prepared`` running the writer's own ``insert_event`` statement
  (insert ``ON CONFLICT DO NOTHING`` + the work row, no NOTIFY) with the same parameters;
- with ``--roles owner,receiver``, each writer also logged in as a least-privileged receiver
  (``inbox db roles``' grants: EXECUTE on the owner's write functions, which every writer
  calls, and nothing else; docs/security.md), beside the owner: what the role costs.

Every write is a new key with a ~1 KB JSON body. Each writer gets a pool of as many
connections as there are writers (pgbench opens one per client). Each run gets a fresh
database cloned from a migrated template; runs of the configurations are interleaved so that
noise from a shared machine spreads over all of them; the table quotes the median run.

Wake-ups are checked on every writer run (``benchmarks._wakeups``): a separate process
LISTENs, counts notifications, and after each batch of them counts the events a woken worker
would find. A run's tail is "woken" when a notification arrived after the last write returned
and the scan that followed saw the last row.

The database is ``INBOX_BENCH_DATABASE_URL`` (a maintenance database; the benchmark creates
and drops its own), else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from benchmarks._common import fetch_one, own_cpu_seconds, server_facts
from benchmarks._payloads import EVENT_TYPE, SOURCE, make_body, make_headers
from benchmarks._pgbench import find_pgbench, pgbench_script, pgbench_version, run_pgbench
from benchmarks._report_frame import Driver
from benchmarks._servers import backends_cpu
from benchmarks._wakeups import APP_NAME, Listener
from inbox import AsyncInboxWriter, InboxWriter
from inbox._core.database import migrate as _migrate
from inbox._core.database.roles import PARTS, RoleNames, grant_roles
from inbox.testing import create_database, drop_database, new_database

Admin = psycopg.Connection[Any]
# The writers' connections, told apart from the listener's by name (their CPU is measured).
WRITERS_APP_NAME = f"{APP_NAME} writers"

WRITER_CONFIGS = (
    ("async", "after_commit"),
    ("async", "in_transaction"),
    ("sync", "after_commit"),
    ("sync", "in_transaction"),
)
PGBENCH = "pgbench"


# --- one run --------------------------------------------------------------------------------


@dataclass
class Run:
    rate: float  # writes (or pgbench transactions) per second
    notifications: int | None = None
    tail_woken: bool | None = None
    rows_ok: bool | None = None
    client_cpu: float | None = None  # CPU seconds of the client per wall second
    database_us: float | None = None  # CPU us of the writers' PostgreSQL backends a write
    note: str = ""


@dataclass
class Timing:
    warmup: float
    duration: float

    def window(self, t0: float) -> tuple[float, float]:
        return t0 + self.warmup, t0 + self.warmup + self.duration


def _count_rows(url: str) -> tuple[int, int]:
    """(events, work rows) in the run's database."""
    row = fetch_one(
        url, "select (select count(*) from inbox_events), (select count(*) from inbox_work)"
    )
    return int(row[0]), int(row[1])


@dataclass
class WriterOutcome:
    counted: int  # writes that returned inside the measured window
    last_done: float  # monotonic time the last write returned
    client_cpu: float  # CPU seconds of this process per wall second, while writing
    wake: tuple[int, float, int]  # the listener's (count, last notification at, rows seen)
    database_us: float  # CPU us of the writers' backends a write, warm-up and tail included


# After the writers stop, wait this long before asking the listener what it saw: past the
# coalescing interval (50 ms) and the notification's travel, but before writer.close(), which
# sends a pending wake-up itself and would hide a tail the running writer left unannounced.
TAIL_GRACE_SECONDS = 0.25


def _pool_kwargs() -> dict[str, object]:
    return {"autocommit": True, "application_name": WRITERS_APP_NAME}


def _backends_cpu_since(admin: Admin, before: dict[int, float]) -> float:
    """CPU seconds the writers' backends spent since ``before`` (backends_cpu's reading)."""
    now = backends_cpu(admin, WRITERS_APP_NAME)
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in now.items())


async def _async_writers(
    url: str, listener: Listener, mode: str, writers: int, timing: Timing, admin: Admin
) -> WriterOutcome:
    pool = AsyncConnectionPool(
        url, min_size=writers, max_size=writers, kwargs=_pool_kwargs(), open=False
    )
    await pool.open(wait=True)
    writer = AsyncInboxWriter(pool=pool, notify=mode)  # type: ignore[arg-type]
    tag = uuid.uuid4().hex[:8]
    last_done = 0.0
    done = 0

    async def one(n: int, start: float, end: float) -> int:
        nonlocal last_done, done
        counted = i = 0
        while True:
            key = f"{tag}-{n}-{i}"
            i += 1
            await writer.write(
                SOURCE, key, make_body(key), make_headers(key), event_type=EVENT_TYPE
            )
            done += 1
            now = time.monotonic()
            last_done = max(last_done, now)
            if now >= end:
                return counted
            if now >= start:
                counted += 1

    try:
        db0 = backends_cpu(admin, WRITERS_APP_NAME)
        cpu0, wall0 = own_cpu_seconds(), time.monotonic()
        start, end = timing.window(wall0)
        counts = await asyncio.gather(*(one(n, start, end) for n in range(writers)))
        cpu = (own_cpu_seconds() - cpu0) / (time.monotonic() - wall0)
        database_us = _backends_cpu_since(admin, db0) / max(done, 1) * 1e6
        await asyncio.sleep(TAIL_GRACE_SECONDS)
        wake = listener.stop()
        await writer.close()
    finally:
        await pool.close()
    return WriterOutcome(sum(counts), last_done, cpu, wake, database_us)


def _sync_writers(
    url: str, listener: Listener, mode: str, writers: int, timing: Timing, admin: Admin
) -> WriterOutcome:
    pool = ConnectionPool(
        url, min_size=writers, max_size=writers, kwargs=_pool_kwargs(), open=False
    )
    pool.open(wait=True)
    writer = InboxWriter(pool=pool, notify=mode)  # type: ignore[arg-type]
    tag = uuid.uuid4().hex[:8]
    counts = [0] * writers
    done = [0] * writers
    last_done = [0.0] * writers
    barrier = threading.Barrier(writers + 1)
    window: list[float] = []

    def one(n: int) -> None:
        barrier.wait()
        start, end = window
        counted = i = 0
        while True:
            key = f"{tag}-{n}-{i}"
            i += 1
            writer.write(SOURCE, key, make_body(key), make_headers(key), event_type=EVENT_TYPE)
            done[n] += 1
            now = time.monotonic()
            last_done[n] = now
            if now >= end:
                break
            if now >= start:
                counted += 1
        counts[n] = counted

    threads = [threading.Thread(target=one, args=(n,), daemon=True) for n in range(writers)]
    try:
        for t in threads:
            t.start()
        db0 = backends_cpu(admin, WRITERS_APP_NAME)
        cpu0, wall0 = own_cpu_seconds(), time.monotonic()
        window.extend(timing.window(wall0))
        barrier.wait()
        for t in threads:
            t.join()
        cpu = (own_cpu_seconds() - cpu0) / (time.monotonic() - wall0)
        database_us = _backends_cpu_since(admin, db0) / max(sum(done), 1) * 1e6
        time.sleep(TAIL_GRACE_SECONDS)
        wake = listener.stop()
        writer.close()
    finally:
        pool.close()
    return WriterOutcome(sum(counts), max(last_done), cpu, wake, database_us)


def run_writer(
    url: str,
    listener: Listener,
    kind: str,
    mode: str,
    writers: int,
    timing: Timing,
    write_url: str | None = None,
) -> Run:
    """One run; the writers log in with ``write_url`` when given (a receiver's login),
    the listener and the counts with ``url``."""
    listener.start(url)
    writing = write_url or url
    with psycopg.connect(url, autocommit=True) as admin:
        if kind == "async":
            out = asyncio.run(_async_writers(writing, listener, mode, writers, timing, admin))
        else:
            out = _sync_writers(writing, listener, mode, writers, timing, admin)
    count, _last_at, seen = out.wake
    events, work = _count_rows(url)
    return Run(
        rate=out.counted / timing.duration,
        notifications=count,
        tail_woken=seen == events,
        rows_ok=events == work and events >= out.counted,
        client_cpu=out.client_cpu,
        database_us=out.database_us,
        note="" if events == work else f"events={events} work={work}",
    )


def run_ceiling(pgbench: str, script: Path, url: str, clients: int, timing: Timing) -> Run:
    rate, client_cpu = run_pgbench(pgbench, script, url, clients, timing.duration)
    events, work = _count_rows(url)
    return Run(rate=rate, rows_ok=events == work and events > 0, client_cpu=client_cpu)


# --- the whole benchmark --------------------------------------------------------------------


@dataclass
class Config:
    kind: str  # "pgbench" | "async" | "sync"
    mode: str  # notify mode, "" for pgbench
    writers: int
    role: str = "owner"  # "owner" | "receiver": the role the writers log in as
    runs: list[Run] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.kind == PGBENCH:
            return "pgbench (ceiling)"
        cls = "AsyncInboxWriter" if self.kind == "async" else "InboxWriter (threads)"
        return f"{cls}, {self.mode}" + (", as receiver" if self.role == "receiver" else "")

    def median(self) -> float:
        return statistics.median(r.rate for r in self.runs)


@dataclass
class IngestResult:
    configs: list[Config]
    timing: Timing
    runs: int
    ceiling: str  # pgbench's version and which pgbench it is

    def median_of(self, kind: str, mode: str, writers: int) -> float | None:
        for c in self.configs:
            if (c.kind, c.mode, c.writers) == (kind, mode, writers) and c.runs:
                return c.median()
        return None

    def vs_pgbench(self, kind: str, mode: str, writers: int) -> float | None:
        """A writer's median rate ÷ pgbench's at the same concurrency."""
        rate, ceiling = self.median_of(kind, mode, writers), self.median_of(PGBENCH, "", writers)
        return rate / ceiling if rate is not None and ceiling else None


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", type=float, default=5.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=0.3, help="unmeasured seconds before")
    p.add_argument("--writers", default="1,16,64", help="comma-separated concurrency levels")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated subset of: pgbench, async-after_commit, async-in_transaction,"
        " sync-after_commit, sync-in_transaction",
    )
    p.add_argument(
        "--roles",
        default="owner",
        help="comma-separated: owner (the tables' owner, the default), receiver (a login"
        " holding only the receiver's grants)",
    )


def build_configs(
    writer_counts: Sequence[int], only: Set[str] = frozenset(), roles: Sequence[str] = ("owner",)
) -> list[Config]:
    configs: list[Config] = []
    for writers in writer_counts:
        if not only or PGBENCH in only:
            configs.append(Config(PGBENCH, "", writers))
        for kind, mode in WRITER_CONFIGS:
            if not only or f"{kind}-{mode}" in only:
                configs += [Config(kind, mode, writers, role) for role in roles]
    return configs


def fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def render(result: IngestResult) -> list[str]:
    configs, timing, runs = result.configs, result.timing, result.runs
    ceilings = {c.writers: c.median() for c in configs if c.kind == PGBENCH and c.runs}
    lines = [
        "## Ingest through the library: new events/s, writers beside pgbench",
        "",
        "| writers | client | writes/s (median) | range | spread | vs pgbench"
        " | notifications (median) | tail woken | rows ok | client CPU | database µs a write |",
        "|---:|---|---:|---:|---:|---:|---:|:-:|:-:|---:|---:|",
    ]
    for c in configs:
        if not c.runs:
            continue
        rates = [r.rate for r in c.runs]
        med = c.median()
        spread = (max(rates) - min(rates)) / med if med else 0.0
        ceiling = ceilings.get(c.writers)
        ratio = f"{med / ceiling:.2f}" if ceiling and c.kind != PGBENCH else "—"
        notes = [r.notifications for r in c.runs if r.notifications is not None]
        notif = f"{statistics.median(notes):,.0f}" if notes else "—"
        tails = [r.tail_woken for r in c.runs if r.tail_woken is not None]
        tail = f"{sum(tails)}/{len(tails)}" if tails else "—"
        rows_ok = "yes" if all(r.rows_ok for r in c.runs) else "NO"
        cpus = [r.client_cpu for r in c.runs if r.client_cpu is not None]
        cpu = f"{statistics.median(cpus):.0%}" if cpus else "—"
        dbs = [r.database_us for r in c.runs if r.database_us is not None]
        db = f"{statistics.median(dbs):.0f}" if dbs else "—"
        lines.append(
            f"| {c.writers} | {c.label} | {fmt_rate(med)} | {fmt_rate(min(rates))}-"
            f"{fmt_rate(max(rates))} | {spread:.0%} | {ratio} | {notif} | {tail} | {rows_ok}"
            f" | {cpu} | {db} |"
        )
    lines += [
        "",
        f"{runs} run(s) per configuration, {timing.duration:g} s measured after"
        f" {timing.warmup:g} s warm-up, a fresh database per run, runs interleaved.",
        "spread = (max - min) / median over the runs. 'tail woken' = runs in which the"
        " listener's count(*) after its last notification (read before writer.close(), which"
        " sends a pending wake-up itself) saw every event, as a woken worker would."
        " 'rows ok' = one work row per event, and at least as many events as"
        " counted writes.",
        f"The ceiling is {result.ceiling}: it runs the writer's own insert_event statement"
        " (insert ON CONFLICT DO NOTHING + work row, NOTIFY off) with -n -M prepared; each"
        " writer has a pool of as many connections as writers. 'client CPU' = CPU time of the"
        " load generator (the Python process, or pgbench) per wall-clock second, median (100% ="
        f" one core of {os.cpu_count()}); the LISTEN process is not included. 'database µs a"
        " write' = CPU time of the writers' PostgreSQL backends over every write of the run"
        " (warm-up included), median: the server's share, which runs on this machine.",
    ]
    return lines


def _measure_one(
    c: Config, server: str, template: str, pgbench: str, script: Path, listener: Listener, t: Timing
) -> Run:
    with new_database(server, template=template) as url:
        if c.kind == PGBENCH:
            return run_ceiling(pgbench, script, url, c.writers, t)
        login = _login(url, RECEIVER) if c.role == "receiver" else None
        return run_writer(url, listener, c.kind, c.mode, c.writers, t, login)


# The benchmark's own receiver roles: made in the template (its clones carry the grants),
# dropped once the template is.
RECEIVER = RoleNames(prefix="inbox_bench")


def _login(url: str, names: RoleNames) -> str:
    return make_conninfo(url, user=f"{names.of('receiver')}_login")


def _make_receiver(template_url: str, names: RoleNames) -> None:
    with psycopg.connect(template_url, autocommit=True) as conn:
        grant_roles(conn, names)  # type: ignore[arg-type]
        conn.execute(
            sql.SQL("create role {} login in role {}").format(
                sql.Identifier(f"{names.of('receiver')}_login"),
                sql.Identifier(names.of("receiver")),
            )
        )


def _drop_roles(server: str, names: RoleNames) -> None:
    """Every role of ``names`` (the databases they held grants in are gone)."""
    with psycopg.connect(server, autocommit=True) as conn:
        for role in [f"{names.of('receiver')}_login", *(names.of(p) for p in PARTS)]:
            conn.execute(sql.SQL("drop role if exists {}").format(sql.Identifier(role)))


def measure(server: str, args: argparse.Namespace, logs: Path | None = None) -> IngestResult:
    """Every configuration the command line names, ``--runs`` times on ``server``, the runs
    interleaved."""
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    roles = [s.strip() for s in args.roles.split(",") if s.strip()]
    if not set(roles) <= {"owner", "receiver"}:
        raise SystemExit(f"ingest: --roles {args.roles!r}: use owner, receiver or both")
    configs = build_configs([int(w) for w in args.writers.split(",")], only, roles)
    runs, timing = args.runs, Timing(args.warmup, args.duration)
    pgbench, origin = find_pgbench(server_facts(server)["server_version"])
    version = pgbench_version(pgbench)
    listener = Listener()
    template = f"inbox_bench_tpl_{uuid.uuid4().hex[:12]}"
    try:
        template_url = create_database(server, template)
        _migrate.upgrade(template_url)
        if "receiver" in roles:
            _drop_roles(server, RECEIVER)  # left by an interrupted run
            _make_receiver(template_url, RECEIVER)
        with tempfile.TemporaryDirectory(prefix="inbox-bench-pgbench-") as tmp:
            script = Path(tmp) / "insert_event.sql"
            script.write_text(pgbench_script(), encoding="utf-8")
            for rep in range(runs):
                for c in configs:
                    run = _measure_one(c, server, template, pgbench, script, listener, timing)
                    c.runs.append(run)
                    extra = (
                        ""
                        if run.notifications is None
                        else f"  notifications={run.notifications} tail_woken={run.tail_woken}"
                    )
                    print(
                        f"run {rep + 1}/{runs}  {c.writers:>3} x {c.label:<40}"
                        f" {run.rate:>9,.0f}/s{extra}"
                        f"{'  ROWS: ' + run.note if run.note else ''}",
                        flush=True,
                    )
    finally:
        drop_database(server, template)
        if "receiver" in roles:
            with contextlib.suppress(psycopg.Error):
                _drop_roles(server, RECEIVER)
        listener.close()
    return IngestResult(configs, timing, runs, f"{version} ({origin})")


QUICK = {"runs": 1, "duration": 0.5, "warmup": 0.1}
DRIVER = Driver("ingest", __doc__, _options, measure, render, quick=QUICK)
