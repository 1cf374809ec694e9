"""What the processing benchmarks drive: the systems (pg-inbox with a handler, or a peer's
configuration), their worker processes and databases (backlogs: ``_loading``), and the timed drain.

Shared by ``benchmarks.processing`` (figures 3-5) and ``benchmarks.storm`` (figure 6). The
peers run from their own virtual environment through ``_peer_worker.py``.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from benchmarks._apps import BUSINESS_TABLE_DDL
from benchmarks._common import DIRECT, REPO, Route, child_env, fetch_one
from benchmarks._loading import analyze, load_inbox_backlog
from inbox._core.database import migrate as _migrate
from inbox.testing import create_database, drop_database

PEER_SCRIPT = Path(__file__).resolve().parent / "_peer_worker.py"

# --- the systems ----------------------------------------------------------------------------


# pg-inbox's systems: the benchmarks._apps router each runs.
INBOX_APPS = {"inbox-noop": "noop", "inbox-business": "business", "inbox-batch": "business_batch"}
# Those whose every event writes one bench_business row.
INBOX_BUSINESS = ("inbox-business", "inbox-batch")


@dataclass(frozen=True)
class System:
    """One thing that drains a queue: pg-inbox with a handler, or a peer configuration."""

    # inbox-noop | inbox-business | inbox-batch | pgqueuer-psycopg | pgqueuer-asyncpg |
    # procrastinate
    name: str
    batch_size: int = 0  # pgqueuer batch_size
    concurrency: int = 1  # pg-inbox --concurrency; procrastinate concurrency; pgq max tasks
    pool: int = 0  # PGQueuer: >0 = its job does the business INSERT through an asyncpg pool

    @property
    def business(self) -> bool:
        """Each event/job writes one bench_business row."""
        return self.name in INBOX_BUSINESS or self.pool > 0

    @property
    def family(self) -> str:
        return self.name.split("-")[0]

    @property
    def label(self) -> str:
        """The system as a table names it."""
        return self._labels()[0]

    @property
    def short_label(self) -> str:
        """A label that fits under a chart's bar."""
        return self._labels()[1]

    def _labels(self) -> tuple[str, str]:
        c = self.concurrency
        if self.family == "inbox":
            handler, kind = {
                "inbox-noop": ("no-op", "no-op"),
                "inbox-batch": ("business rows by a batch handler's one INSERT", "batch"),
            }.get(self.name, ("1 business INSERT", "business"))
            return f"pg-inbox, {handler} (--concurrency {c})", f"pg-inbox {kind} c={c}"
        if self.family == "pgqueuer":
            driver, batch = self.name.split("-")[1], self.batch_size
            limit = f", max_concurrent_tasks={c}" if c > 1 else ""
            insert, short = (
                (f", 1 INSERT via pool of {self.pool}", f" INSERT p={self.pool}")
                if self.pool
                else ("", "")
            )
            return (
                f"PGQueuer {driver}, batch_size={batch}{limit}{insert}",
                f"PGQueuer {driver} b={batch}{short}",
            )
        return f"procrastinate, concurrency={c}", f"procrastinate c={c}"

    @property
    def remaining_sql(self) -> str:
        if self.family == "inbox":
            return "select count(*) from inbox_work"
        if self.family == "pgqueuer":
            return "select count(*) from pgqueuer"
        return "select count(*) from procrastinate_jobs where status in ('todo', 'doing')"


# A drain's note when the backlog was gone by the first look: nothing wrong, no rate.
TOO_SMALL_TO_TIME = "drained within one poll: backlog too small to time"


def parse_system(text: str) -> System:
    """``name[:b=N][:c=N][:p=N]``, e.g. ``pgqueuer-asyncpg:b=100``, ``procrastinate:c=20`` or
    ``pgqueuer-asyncpg:b=200:p=32`` (PGQueuer's job INSERTs through an asyncpg pool of 32)."""
    name, *opts = text.split(":")
    kwargs: dict[str, int] = {}
    for opt in opts:
        key, _, value = opt.partition("=")
        kwargs[{"b": "batch_size", "c": "concurrency", "p": "pool"}[key]] = int(value)
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
        app = INBOX_APPS.get(system.name, "noop")
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
        if system.pool:
            cmd += ["--pool", str(system.pool)]
    else:
        cmd += ["--concurrency", str(system.concurrency)]
    if record:
        cmd += ["--record", record]
    return cmd


def reach(route: Route, system: System, url: str) -> tuple[str, dict[str, str]]:
    """The URL and settings of ``system``'s processes for the database at ``url``: pg-inbox's
    by ``route``, a peer's always directly."""
    if system.family != "inbox":
        return url, {}
    return route.url(url), route.env(url)


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


def load_backlog(env: Env, system: System, url: str, n: int) -> None:
    if system.family == "inbox":
        load_inbox_backlog(url, n)
    else:
        peer(env, "enqueue", system.family, url, str(n))
        analyze(url)


# The drain's poll waits at least this many times as long as its count took.
POLL_SHARE = 50


def remaining(conn: psycopg.Connection, system: System) -> int:  # type: ignore[type-arg]
    row = conn.execute(system.remaining_sql).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


# --- the timed drain ---------------------------------------------------------------------


@dataclass
class Drain:
    rate: float  # events/s from the first observed progress to empty
    total: float  # seconds from spawning the workers to empty
    startup: float  # seconds from spawning to the first observed progress
    ok: bool
    note: str = ""
    cpu_us: float = 0.0  # the workers' CPU (user + system) per event counted, microseconds


def cpu_seconds(procs: Sequence[subprocess.Popen[bytes]]) -> float:
    """User + system CPU seconds the processes have used so far (Linux /proc; 0 elsewhere)."""
    total = 0
    for p in procs:
        try:
            # Fields after the command's parenthesis: utime and stime are the 12th and 13th.
            fields = Path(f"/proc/{p.pid}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


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
    route: Route = DIRECT,
) -> Drain:
    """Start the workers on a loaded backlog and time them to an empty queue (pg-inbox's
    workers reach the database by ``route``; the count is always read directly)."""
    parts, route_env = reach(route, system, url)
    with psycopg.connect(url, autocommit=True) as conn:
        spawned = time.monotonic()
        procs = [
            spawn(
                env,
                worker_command(env, system, parts),
                parts,
                f"{tag}-{system.name}-{i}",
                **route_env,
            )
            for i in range(processes)
        ]
        first_at: float | None = None
        first_cpu = last_cpu = 0.0
        first_left = backlog
        left = backlog
        note = ""
        try:
            while True:
                now = time.monotonic()
                left = remaining(conn, system)
                polled = time.monotonic() - now
                if on_progress is not None:
                    on_progress(left, procs)
                if first_at is None and left < backlog:
                    first_at, first_left = now, left
                    first_cpu = cpu_seconds(procs)
                if left == 0:
                    last_cpu = cpu_seconds(procs)
                    break
                if now - spawned > timeout or (first_at is None and now - spawned > 60):
                    note = f"timeout with {left} left"
                    break
                dead = [p.returncode for p in procs if p.poll() is not None]
                if dead:
                    note = f"worker exited {dead}"
                    break
                # The count scans the whole table, dead rows included: every --poll-ms, it
                # slowed a 1,000,000-row drain on 2 cores by a quarter (and a small one not at
                # all). Spaced out to keep its share under 1/POLL_SHARE, the end stays
                # within a poll's share of the drain's span.
                time.sleep(max(env.poll, POLL_SHARE * polled))
            done_at = time.monotonic()
        finally:
            codes = stop(procs)
        if any(c not in (0, -signal.SIGTERM) for c in codes) and not note:
            note = f"exit codes {codes}"
    if first_at is None or left:
        return Drain(0.0, done_at - spawned, 0.0, False, note or "no progress")
    if first_left == 0:
        # Drained between two polls: no rate can be timed (a backlog too small for --poll-ms).
        note = note or TOO_SMALL_TO_TIME
        return Drain(0.0, done_at - spawned, first_at - spawned, False, note)
    counted = first_left
    span = max(done_at - first_at, 1e-6)
    cpu_us = (last_cpu - first_cpu) / counted * 1e6
    return Drain(counted / span, done_at - spawned, first_at - spawned, not note, note, cpu_us)


def check_inbox_result(url: str, system: System, backlog: int) -> str:
    """What is wrong with a drained database (every event processed once, every business row
    written once), or ""."""
    if system.family == "pgqueuer" and system.pool:
        rows = int(fetch_one(url, "select count(*) from bench_business")[0])
        return "" if rows == backlog else f"business rows={rows}"
    if system.family != "inbox":
        return ""
    attempts, business = (
        int(n)
        for n in fetch_one(
            url,
            "select (select count(*) from inbox_attempts where outcome = 'processed'),"
            " (select count(*) from bench_business)",
        )
    )
    wrong = []
    if attempts != backlog:
        wrong.append(f"attempts={attempts}")
    if system.business and business != backlog:
        wrong.append(f"business rows={business}")
    return ", ".join(wrong)


# --- templates and peers -------------------------------------------------------------------


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
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(BUSINESS_TABLE_DDL)  # type: ignore[arg-type]
    return templates


@contextlib.contextmanager
def templates_of(
    server: str, peers_python: str | None, families: set[str]
) -> Iterator[dict[str, str]]:
    templates = make_templates(server, peers_python, families)
    try:
        yield templates
    finally:
        for name in templates.values():
            drop_database(server, name)


def named_systems(text: str, peers_python: str | None) -> list[System]:
    """The systems named; a peer's only when the peers' environment is there."""
    out = [parse_system(s) for s in text.split(",") if s.strip()]
    return [s for s in out if s.family == "inbox" or peers_python]
