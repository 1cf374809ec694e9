"""Behind a transaction pooler: pg-inbox through PgBouncer beside pg-inbox direct.

    python -m benchmarks pooler                 # 3 runs of each figure, each way
    python -m benchmarks pooler --quick         # a smoke run
    python -m benchmarks pooler --database-url postgresql://postgres@127.0.0.1/postgres

Starts PgBouncer (Debian's package, ``apt-get install pgbouncer``) as the tests start it
(tests/_pgbouncer.py): ``pool_mode = transaction`` and the pooler's defaults otherwise, a
pool of --pool-size server connections per database and user (20 is PgBouncer's default),
on a free loopback port in front of the server. Each figure is measured both ways in one
run, the two ways' runs interleaved (every round runs each once, the order alternating), and
each figure is the median of --runs runs. Through PgBouncer the parts run with ``[database]
pooler = "transaction"`` and the worker listens on the direct URL (``listen_url``);
"direct" is the same parts with the same URL minus the pooler.

- **HTTP**: `inbox serve`, one each way on one fresh database, --requests signed Standard
  Webhooks requests per run (each a new event) from --concurrency keep-alive connections,
  after 200 unmeasured warm-up requests (receiver_load's raw driver): req/s, p50 and p99 of
  the median run, and every request stored once.
- **wake latency**: at idle, --events writes one at a time with a uniform random gap of
  --gap-ms, by ``AsyncInboxWriter`` in this process (the receiver's write, on the same
  route), to one ``inbox worker`` woken by LISTEN/NOTIFY: the write's commit → its
  handler's start (processing's latency figure).
- **drain**: a backlog of --backlog events, loaded before the worker starts, drained by one
  ``inbox worker --concurrency`` --drain-concurrency with one business INSERT per event
  (processing's throughput figure): events/s, and each event processed once.

Goals: `inbox serve` and the drain through the pooler at least 0.8x direct; the wake
latency's p50 through it at most 2x direct.

The server is --database-url (a maintenance database; the benchmark creates and drops its
own), else ``INBOX_BENCH_DATABASE_URL``, else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from benchmarks._common import DIRECT, Route, fetch_one, median, percentile
from benchmarks._http_load import Run, drive_raw, signed_requests
from benchmarks._latency import WARMUP_EVENTS, Latency, run_latency
from benchmarks._report_frame import Driver
from benchmarks._servers import inbox_serve
from benchmarks._systems import (
    TOO_SMALL_TO_TIME,
    Drain,
    Env,
    System,
    check_inbox_result,
    drain,
    load_backlog,
    templates_of,
)
from inbox.testing import new_database
from tests._pgbouncer import PACKAGE, find_pgbouncer, running_pgbouncer

WARMUP_REQUESTS = 200
GOAL_HTTP = 0.8  # req/s through the pooler ÷ direct, at least
GOAL_DRAIN = 0.8  # events/s through the pooler ÷ direct, at least
GOAL_LATENCY = 2.0  # p50 through the pooler ÷ direct, at most
POOLED = "PgBouncer"
# The drain's third side: the pooled mode's settings (nothing prepared) on the direct URL,
# which tells the pooler's hop from what the pooled mode gives up.
UNPREPARED = Route("direct, nothing prepared", lambda url: url)


@dataclass
class Side:
    """One way to the database, and what was measured on it."""

    route: Route
    http: list[Run] = field(default_factory=list)
    latency: list[Latency] = field(default_factory=list)
    drains: list[Drain] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "through PgBouncer" if self.route.label == POOLED else self.route.label

    def rps(self) -> float | None:
        return statistics.median(r.rps for r in self.http) if self.http else None

    def http_percentile(self, p: float) -> float | None:
        """The p-quantile (0..1) of the median run's latencies, in ms."""
        if not self.http:
            return None
        return sorted(self.http, key=lambda r: r.rps)[len(self.http) // 2].percentile(p)

    def wake(self, p: float) -> float | None:
        """The median over the runs of each run's p-th percentile (0..100), in ms."""
        measured = [r.values_ms for r in self.latency if r.values_ms]
        return median([percentile(v, p) for v in measured]) if measured else None

    def drain_rate(self) -> float | None:
        rates = [d.rate for d in self.drains if d.ok]
        return median(rates) if rates else None


@dataclass
class PoolerResult:
    sides: list[Side]
    args: argparse.Namespace
    stored: int = 0  # events `inbox serve` stored, both ways
    problems: list[str] = field(default_factory=list)

    unprepared: Side = field(default_factory=lambda: Side(UNPREPARED))

    def side(self, pooled: bool) -> Side:
        return next(s for s in self.sides if bool(s.route.pooled) == pooled)


def _rounds(sides: list[Side], runs: int) -> list[Side]:
    """Every side once a round, the first of a round alternating."""
    return [s for r in range(runs) for s in (sides if r % 2 == 0 else sides[::-1])]


def _http(
    server: str, template: str, sides: list[Side], args: argparse.Namespace, logs: Path
) -> int:
    """Both ways' `inbox serve` on one database; the events they stored."""
    with new_database(server, template=template) as db_url, contextlib.ExitStack() as stack:
        urls = {
            id(s): stack.enter_context(inbox_serve(db_url, logs, route=s.route)).url for s in sides
        }
        for side in sides:
            anyio.run(drive_raw, urls[id(side)], signed_requests(WARMUP_REQUESTS), args.concurrency)
        for side in _rounds(sides, args.runs):
            requests = signed_requests(args.requests)  # before the clock starts
            run = anyio.run(drive_raw, urls[id(side)], requests, args.concurrency)
            side.http.append(run)
            print(
                f"http {side.label:<17} {run.rps:>7,.0f} req/s, p50 {run.percentile(0.5):.1f} ms,"
                f" p99 {run.percentile(0.99):.1f} ms, non-2xx {run.failures}",
                flush=True,
            )
        return int(fetch_one(db_url, "select count(*) from inbox_events")[0])


def _latency(env: Env, sides: list[Side], args: argparse.Namespace) -> None:
    system = System("inbox-noop")
    for side in _rounds(sides, args.runs):
        result = run_latency(env, system, args.events, args.gap, timeout=60.0, route=side.route)
        side.latency.append(result)
        v = result.values_ms
        p50, p99 = (percentile(v, 50), percentile(v, 99)) if v else (0.0, 0.0)
        print(
            f"latency {side.label:<17} p50 {p50:.2f} ms, p99 {p99:.2f} ms,"
            f" missing {result.missing}",
            flush=True,
        )


def _drain(env: Env, template: str, sides: list[Side], args: argparse.Namespace) -> list[str]:
    system = System("inbox-business", concurrency=args.drain_concurrency)
    problems = []
    for side in _rounds(sides, args.runs):
        with new_database(env.server, template=template) as url:
            load_backlog(env, system, url, args.backlog)
            result = drain(
                env, system, url, args.backlog, 1, timeout=args.timeout, route=side.route
            )
            # Checked however the drain was timed: a backlog too small for a rate still has
            # to be processed once, each business row written once.
            bad = check_inbox_result(url, system, args.backlog)
        if bad:
            result.ok, result.note = False, bad
        if result.note and result.note != TOO_SMALL_TO_TIME:
            problems.append(f"drain {side.label}: {result.note}")
        side.drains.append(result)
        print(
            f"drain {side.label:<17} {result.rate:>8,.0f} events/s"
            f" (start->empty {result.total:.1f} s){'  ' + result.note if result.note else ''}",
            flush=True,
        )
    return problems


def measure(server: str, args: argparse.Namespace, logs: Path) -> PoolerResult:
    binary = find_pgbouncer()
    if binary is None:
        raise SystemExit(f"python -m benchmarks pooler needs PgBouncer: apt-get install {PACKAGE}")
    with (
        running_pgbouncer(server, pool_size=args.pool_size, binary=binary) as bouncer,
        templates_of(server, None, {"inbox"}) as templates,
    ):
        sides = [Side(DIRECT), Side(Route(POOLED, bouncer.pooled))]
        result = PoolerResult(sides, args)
        env = Env(server, templates, None, args.poll_ms / 1000, logs)
        result.stored = _http(server, templates["inbox"], sides, args, logs)
        _latency(env, sides, args)
        result.problems += _drain(env, templates["inbox"], [*sides, result.unprepared], args)
    expected = 2 * (WARMUP_REQUESTS + args.runs * args.requests)
    if result.stored != expected:
        result.problems.append(f"`inbox serve` stored {result.stored:,} events of {expected:,}")
    for side in sides:
        if failures := sum(r.failures for r in side.http):
            result.problems.append(f"`inbox serve` {side.label}: {failures:,} non-2xx replies")
        if missing := sum(r.missing for r in side.latency):
            result.problems.append(f"wake latency {side.label}: {missing} events not handled")
    return result


def _cell(value: float | None, form: str = "{:,.0f}") -> str:
    return "—" if value is None else form.format(value)


def _ratio(
    pooled: float | None, direct: float | None, goal: str = "", met: Callable[[float], bool] = bool
) -> tuple[str, str]:
    if pooled is None or not direct:
        return "—", goal
    ratio = pooled / direct
    return f"{ratio:.2f}x", (f"{goal} {'met' if met(ratio) else 'MISSED'}" if goal else "")


def render(result: PoolerResult) -> list[str]:
    args = result.args
    direct, pooled = result.side(False), result.side(True)
    rows = []

    def row(what: str, d: str, p: str, ratio: tuple[str, str]) -> None:
        rows.append(f"| {what} | {d} | {p} | {ratio[0]} | {ratio[1]} |")

    row(
        f"`inbox serve`, req/s at {args.concurrency} connections",
        _cell(direct.rps()),
        _cell(pooled.rps()),
        _ratio(pooled.rps(), direct.rps(), f"≥ {GOAL_HTTP:g}x", lambda r: r >= GOAL_HTTP),
    )
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        d, p = direct.http_percentile(q), pooled.http_percentile(q)
        row(f"`inbox serve`, {name} ms", _cell(d, "{:.1f}"), _cell(p, "{:.1f}"), _ratio(p, d))
    for name, q in (("p50", 50.0), ("p99", 99.0)):
        d, p = direct.wake(q), pooled.wake(q)
        goal = (f"≤ {GOAL_LATENCY:g}x", lambda r: r <= GOAL_LATENCY) if q == 50.0 else ("", bool)
        row(
            f"commit → handler start, {name} ms",
            _cell(d, "{:.2f}"),
            _cell(p, "{:.2f}"),
            _ratio(p, d, *goal),
        )
    row(
        f"drain, events/s (1 worker, --concurrency {args.drain_concurrency}, business INSERT)",
        _cell(direct.drain_rate()),
        _cell(pooled.drain_rate()),
        _ratio(
            pooled.drain_rate(),
            direct.drain_rate(),
            f"≥ {GOAL_DRAIN:g}x",
            lambda r: r >= GOAL_DRAIN,
        ),
    )
    unprepared = result.unprepared.drain_rate()
    row(
        "drain, direct with nothing prepared (the pooled mode on the direct URL)",
        _cell(direct.drain_rate()),
        _cell(unprepared),
        _ratio(unprepared, direct.drain_rate()),
    )
    lines = [
        "## Through PgBouncer (transaction mode) beside direct",
        "",
        "| figure | direct | through PgBouncer | PgBouncer ÷ direct | goal |",
        "|---|---:|---:|---:|---|",
        *rows,
        "",
        *(f"PROBLEM: {p}" for p in result.problems),
        *([""] if result.problems else []),
        f"Medians of {args.runs} run(s) each way, the two ways' runs interleaved. PgBouncer:"
        f" `pool_mode = transaction`, `default_pool_size = {args.pool_size}`, its defaults"
        ' otherwise; the parts through it run with `pooler = "transaction"` (no prepared'
        " statements, settings per transaction), the worker listening directly. HTTP:"
        f" {args.requests:,} signed requests per run, each a new event, after"
        f" {WARMUP_REQUESTS} warm-up requests; latency percentiles of the median run; events"
        f" stored by both servers: {result.stored:,}. Wake latency: {args.events} writes per"
        f" run (the first {WARMUP_EVENTS} not counted), {args.gap[0]:g}-{args.gap[1]:g} ms"
        f" apart; p50/p99 = the median of the runs' percentiles. Drain: a {args.backlog:,}-event"
        " backlog, the rate from the first progress seen to empty, each event's business row"
        " and processed attempt checked once. The last row runs the worker with the pooled"
        " mode's settings on the direct URL, no PgBouncer: what the pooled mode gives up"
        " (chiefly the handler's own statement, parsed and planned for every event) apart"
        " from the pooler's hop.",
    ]
    return lines


def _gap(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    return float(lo), float(hi or lo)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--database-url", default=None, help="a maintenance database to use")
    p.add_argument("--pool-size", type=int, default=20, help="PgBouncer's default_pool_size")
    p.add_argument("--requests", type=int, default=6000, help="HTTP requests per run")
    p.add_argument("--concurrency", type=int, default=16, help="HTTP connections")
    p.add_argument("--events", type=int, default=500, help="wake-latency writes per run")
    p.add_argument("--gap", type=_gap, default=(20.0, 80.0), help="ms between writes: LO-HI")
    p.add_argument("--backlog", type=int, default=20_000, help="events the worker drains")
    p.add_argument("--drain-concurrency", type=int, default=2, help="the worker's --concurrency")
    p.add_argument("--poll-ms", type=float, default=50.0, help="the drain's count, every ms")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per drain, at most")


def _ran(result: PoolerResult) -> bool:
    return not result.problems


DRIVER = Driver(
    "pooler",
    __doc__,
    _options,
    measure,
    render,
    quick={"requests": 300, "events": 40, "backlog": 5_000, "runs": 1},
    ok=_ran,
)
