"""Duplicate storm: many concurrent deliveries of the same keys, through HTTP, processed once.

    python -m benchmarks storm                       # 1,000 keys x 100 copies, 3 runs
    python -m benchmarks storm --keys 20 --copies 5  # a smoke run of a few seconds

Per run, on a fresh migrated database with the business table: `inbox serve` (one Standard
Webhooks source) and one ``inbox worker --app benchmarks._apps:business`` (one business
INSERT per event, in the claim's transaction). Once the worker listens, --copies identical,
validly signed deliveries of each of --keys distinct keys (the same body and webhook-id per
key) are posted from --concurrency keep-alive connections, in key order: the copies of one
key are in flight together, racing on its unique key. Then the worker drains the queue.

Reported per run: responses by outcome (the receiver's "accepted" / "duplicate", and any
non-2xx), requests/s, and the time from the first request to an empty work table. Then the
database's own account, which must be exact: one ``inbox_events`` row per key; one
``processed`` attempt per key and no ``inbox_work`` row left (a work row is deleted when its
event settles, so "one work row per event" shows as exactly one processed attempt each);
one ``bench_business`` row per key (its ``event_id`` is unique: a second run of the handler
for an event could not commit); and one ``inbox_deliveries`` row per repeated delivery. A
count that is off prints a MISMATCH line; it is a benchmark, so it reports and goes on.

The server is ``INBOX_BENCH_DATABASE_URL`` (a maintenance database; the benchmark creates and
drops its own), else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import collections
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, LiteralString

import anyio
import psycopg

from benchmarks._common import (
    median,
)
from benchmarks._http_load import Request, Run, drive_raw, sign
from benchmarks._report_frame import Driver
from benchmarks._servers import inbox_serve
from benchmarks._systems import Env, System, spawn, stop, templates_of, worker_command
from inbox.testing import new_database

# The worker's LISTEN is issued: from here a delivery wakes it (it is not found by a poll).
LISTENING = """
select count(*) from pg_stat_activity
where datname = current_database()
  and starts_with(application_name, 'pg-inbox listener ')
  and query ilike 'listen %'
"""
WORK_LEFT = "select count(*) from inbox_work"
ACCOUNT = """
select (select count(*) from inbox_events) as events,
       (select count(*) from inbox_deliveries) as deliveries,
       (select count(*) from inbox_work) as work_left,
       (select count(*) from inbox_attempts where outcome = 'processed') as processed,
       (select count(*) from inbox_attempts where outcome <> 'processed') as other_attempts,
       (select count(*) from bench_business) as business
"""
POLL_SECONDS = 0.02
READY_SECONDS = 60.0


@dataclass
class Account:
    """What the database holds after a storm."""

    events: int
    deliveries: int
    work_left: int
    processed: int
    other_attempts: int
    business: int


@dataclass
class StormRun:
    keys: int
    copies: int
    sent: Run  # the driver's view: first request sent -> last response read
    drain_seconds: float  # first request sent -> work table seen empty
    account: Account
    note: str = ""  # a timeout or a dead worker

    @property
    def outcomes(self) -> collections.Counter[str]:
        return self.sent.outcomes

    @property
    def rps(self) -> float:
        return self.sent.rps

    @property
    def non_2xx(self) -> int:
        return self.sent.failures

    def mismatches(self) -> list[str]:
        """Every count that is not what exactly-once processing implies."""
        a, k = self.account, self.keys
        expected = [
            ("inbox_events rows", a.events, k),
            ("processed attempts (one per work row)", a.processed, k),
            ("inbox_work rows left", a.work_left, 0),
            ("bench_business rows", a.business, k),
            ("inbox_deliveries rows (repeats)", a.deliveries, k * (self.copies - 1)),
            ("2xx accepted responses", self.outcomes["2xx accepted"], k),
        ]
        return [
            f"MISMATCH: {what} = {got:,}, expected {want:,}"
            for what, got, want in expected
            if got != want
        ]

    @property
    def exactly_once(self) -> bool:
        """One event, one processing, one business row per key, and nothing left over."""
        a, k = self.account, self.keys
        return a.events == a.processed == a.business == k and a.work_left == 0 and not self.note


def storm_requests(keys: int, copies: int) -> list[Request]:
    """``copies`` identical signed deliveries of each key, the copies of a key side by side."""
    tag = uuid.uuid4().hex[:8]
    now = time.time()
    out: list[Request] = []
    for i in range(keys):
        msg_id = f"msg_storm_{tag}_{i:07d}"
        body = json.dumps(
            {"type": "invoice.paid", "id": msg_id, "data": {"n": i, "amount": 4200}}
        ).encode()
        out.extend([sign(body, msg_id, now)] * copies)
    return out


def _scalar(conn: psycopg.Connection[Any], query: LiteralString) -> int:
    row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def read_account(db_url: str) -> Account:
    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute(ACCOUNT).fetchone()
    assert row is not None
    return Account(*(int(v) for v in row))


def run_once(
    db_url: str, *, keys: int, copies: int, concurrency: int, logs: Path, timeout: float
) -> StormRun:
    """One storm on ``db_url``: a migrated database holding the business table."""
    requests = storm_requests(keys, copies)
    env = Env(server="", templates={}, peers_python=None, poll=POLL_SECONDS, logs=logs)
    system = System("inbox-business")
    note = ""
    with (
        inbox_serve(db_url, logs) as served,
        psycopg.connect(db_url, autocommit=True) as conn,
    ):
        worker = spawn(env, worker_command(env, system, db_url), db_url, "storm-worker")
        try:
            deadline = time.monotonic() + READY_SECONDS
            while not _scalar(conn, LISTENING):
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the storm's worker never listened (see {logs})")
                time.sleep(POLL_SECONDS)
            started = time.perf_counter()
            sent = anyio.run(drive_raw, served.url, requests, concurrency)
            deadline = time.monotonic() + timeout
            while left := _scalar(conn, WORK_LEFT):
                if worker.poll() is not None:
                    note = f"worker exited {worker.returncode} with {left:,} left"
                    break
                if time.monotonic() > deadline:
                    note = f"timeout with {left:,} left"
                    break
                time.sleep(POLL_SECONDS)
            drained = time.perf_counter() - started
        finally:
            stop([worker])
    return StormRun(keys, copies, sent, drained, read_account(db_url), note)


def report_run(run: StormRun) -> list[str]:
    """The lines printed after each run: the figures, then any mismatch."""
    outcomes = ", ".join(f"{o} {n:,}" for o, n in sorted(run.outcomes.items()))
    a = run.account
    lines = [
        f"storm {run.keys:,} keys x {run.copies} copies: {run.rps:,.0f} req/s, drained"
        f" {run.drain_seconds:.1f} s after the first request; responses: {outcomes};"
        f" events {a.events:,}, processed {a.processed:,}, work left {a.work_left:,},"
        f" business {a.business:,}, deliveries {a.deliveries:,}"
        f"{'; ' + run.note if run.note else ''}"
    ]
    return lines + run.mismatches()


@dataclass
class StormResult:
    keys: int
    copies: int
    concurrency: int
    runs: list[StormRun] = field(default_factory=list)

    @property
    def exactly_once(self) -> bool:
        return bool(self.runs) and all(r.exactly_once for r in self.runs)

    @property
    def rps(self) -> float:
        return median([r.rps for r in self.runs])

    @property
    def drain_seconds(self) -> float:
        return median([r.drain_seconds for r in self.runs])


def measure(
    server: str, args: argparse.Namespace, logs: Path, *, template: str | None = None
) -> StormResult:
    """``--runs`` storms on ``server``, each on a fresh database cloned from ``template`` (a
    migrated database with the business table; made for the occasion when None)."""
    result = StormResult(args.keys, args.copies, args.concurrency)
    with templates_of(server, None, set() if template else {"inbox"}) as made:
        tpl = template or made["inbox"]
        for _ in range(args.runs):
            with new_database(server, template=tpl) as db_url:
                run = run_once(
                    db_url,
                    keys=args.keys,
                    copies=args.copies,
                    concurrency=args.concurrency,
                    logs=logs,
                    timeout=args.timeout,
                )
            result.runs.append(run)
            print("\n".join(report_run(run)), flush=True)
    return result


def render(result: StormResult) -> list[str]:
    k, c = result.keys, result.copies
    lines = [
        f"## Duplicate storm: {k:,} keys x {c} concurrent copies through `inbox serve`",
        "",
        "| run | req/s | first request → drained, s | 2xx accepted | 2xx duplicate | non-2xx"
        " | events | processed | work left | business rows | deliveries | exactly once |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:-:|",
    ]
    for i, r in enumerate(result.runs, 1):
        a = r.account
        lines.append(
            f"| {i} | {r.rps:,.0f} | {r.drain_seconds:.1f} | {r.outcomes['2xx accepted']:,}"
            f" | {r.outcomes['2xx duplicate']:,} | {r.non_2xx:,} | {a.events:,}"
            f" | {a.processed:,} | {a.work_left:,} | {a.business:,} | {a.deliveries:,}"
            f" | {'yes' if r.exactly_once else 'NO'} |"
        )
    if result.runs:
        lines.append(
            f"| median | {result.rps:,.0f} | {result.drain_seconds:.1f} | | | | | | | | | |"
        )
    problems = [f"{m} (run {i})" for i, r in enumerate(result.runs, 1) for m in r.mismatches()]
    problems += [f"NOTE: run {i}: {r.note}" for i, r in enumerate(result.runs, 1) if r.note]
    lines += ["", *problems, *([""] if problems else [])]
    lines += [
        f"{k * c:,} validly signed requests per run ({c} identical deliveries of each of"
        f" {k:,} keys, the copies of a key sent side by side) from {result.concurrency}"
        " keep-alive connections; one `inbox worker` process (--concurrency 1) with one"
        " business INSERT per event, running during the storm. Expected per run: events ="
        " processed attempts = business rows = keys, work left 0, deliveries = keys x"
        " (copies - 1), one 'accepted' per key. A work row is deleted when its event settles,"
        " so one processed attempt per event is the count of work rows.",
    ]
    return lines


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", type=int, default=1_000, help="distinct idempotency keys")
    p.add_argument("--copies", type=int, default=100, help="concurrent deliveries of each key")
    p.add_argument("--concurrency", type=int, default=64, help="HTTP connections")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to drain, at most")


def _ran(result: StormResult) -> bool:
    return bool(result.runs)


DRIVER = Driver("storm", __doc__, _options, measure, render, ok=_ran)
