"""Processing: backlog throughput, wake latency and scale, pg-inbox beside procrastinate and
PGQueuer, on one server.

    python -m benchmarks.processing                  # all three figures (~30-40 min on 2 cores)
    python -m benchmarks.processing --quick          # a smoke run (~2-3 min)
    python -m benchmarks.processing --figures throughput --backlog 20000
    python -m benchmarks.processing --figures sweep  # the peers' configurations, side by side

The peers run from their own virtual environment, pinned by ``benchmarks/peers.txt`` and made
by ``python -m benchmarks peers-env`` (``benchmarks/.peers-venv``; elsewhere, name its
interpreter with ``--peers-python`` or ``INBOX_BENCH_PEERS_PYTHON``), through
``benchmarks/_peer_worker.py``; without it the peers are skipped with a note.

**Throughput.** A backlog of --backlog events (default 50,000) is loaded before any worker
starts; then 1 or 2 worker processes drain it. pg-inbox: ``inbox worker --app
benchmarks._apps:noop|business|business_batch --concurrency N`` processes; its backlog is
loaded with one set-based ``INSERT … SELECT generate_series`` into ``inbox_events`` +
``inbox_work`` (the writer's tables and columns, ~1 KB JSON bodies; not through the writer,
which the ingest benchmark measures). Peers: their own bulk-enqueue APIs
(``Queries.enqueue`` with lists, ``Task.batch_defer_async``) and worker APIs
(``QueueManager.run``, ``App.run_worker_async``) with a no-op job. Every database is
ANALYZEd after the load. The driver polls the number of unfinished rows every --poll-ms, or
after 50 times as long as its count took when that is longer (a count scans the table:
polled every 50 ms it slowed a 1,000,000-event drain by a quarter and a small one not at
all); the clock starts at the first poll that sees fewer rows than the backlog (so
interpreter start, imports and connecting are excluded; so is the first batch's work, which
is why the rate is counted over the rows finished after that poll) and stops at the first
poll that sees none. "start→empty" is the whole wall time from spawning the workers,
start-up included.

**Wake latency.** At idle, --events writes one at a time with a uniform random gap of
--gap-ms between them. pg-inbox: ``AsyncInboxWriter`` (default ``notify="after_commit"``) in
this process, one ``inbox worker`` woken by LISTEN/NOTIFY. Peers: one enqueue per transaction
from a separate process through their own API, one worker. Each write's commit time is
``time.time()`` when the write call returned; the handler appends ``time.time()`` when it
starts; both on this machine's clock. The first 5 events of each system are warm-up and
not counted.

**Scale.** With 1,000 vs 1,000,000 rows of history (inbox_events + one inbox_attempts row
each, loaded set-based), a backlog of --scale-backlog events: the claim's latency (the
product's ``WorkStore.claim_batch`` of 64 events with its suspect check and savepoint, timed
from the client, rolled back; and the server's EXPLAIN ANALYZE execution time of ``claim_batch``),
then one worker's drain rate.
Worker RSS: one ``inbox worker`` process's VmRSS at idle, during, and after draining
--rss-events events.

**Backlog size** (``--figures backlog``). One ``inbox worker`` (no-op, ``--concurrency 1``)
drains each of --backlogs (default 20,000 and 1,000,000), loaded once, vacuumed and copied
per run, sizes interleaved; the rate as in the throughput figure, the server's WAL per event
over the drain, and the worker's RSS every tenth.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._backlog import BacklogRow, render_backlogs, run_backlogs
from benchmarks._common import (
    OUT_DIR,
    loadavg,
    median,
)
from benchmarks._latency import LatencyCell, render_latency, run_latency_cells
from benchmarks._peers import PEERS_HELP, default_peers_python, peer_versions, peers_label
from benchmarks._report_frame import Report, command_parser
from benchmarks._scale import RssResult, ScaleRow, render_scale, run_rss, run_scale
from benchmarks._systems import (
    Drain,
    Env,
    System,
    check_inbox_result,
    drain,
    load_backlog,
    named_systems,
    templates_of,
)
from inbox.testing import new_database

# --- figure 3: throughput -------------------------------------------------------------------


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

    def median_cpu_us(self) -> float:
        cpus = [r.cpu_us for r in self.runs if r.ok]
        return median(cpus) if cpus else 0.0


def _best(group: list[Cell], keep: Callable[[System], bool]) -> Cell | None:
    cells = [c for c in group if keep(c.system) and c.median_rate()]
    return max(cells, key=Cell.median_rate) if cells else None


def goal_ratios(group: list[Cell]) -> list[tuple[str, Cell, Cell]]:
    """The issue's comparisons within one process count: (what, pg-inbox cell, peer cell),
    each side at its best configuration measured."""
    ours_b = _best(group, lambda s: s.name == "inbox-business")
    ours_n = _best(group, lambda s: s.name == "inbox-noop")
    ours_batch = _best(group, lambda s: s.name == "inbox-batch")
    pgq_b = _best(group, lambda s: s.family == "pgqueuer" and s.business)
    pgq_n = _best(group, lambda s: s.family == "pgqueuer" and not s.business)
    pairs = [
        ("pg-inbox business ÷ PGQueuer with the same INSERT", ours_b, pgq_b),
        ("pg-inbox business ÷ PGQueuer no-op", ours_b, pgq_n),
        ("pg-inbox no-op ÷ PGQueuer no-op", ours_n, pgq_n),
        ("pg-inbox batch handler ÷ PGQueuer with the same INSERT", ours_batch, pgq_b),
        ("pg-inbox batch handler ÷ PGQueuer no-op", ours_batch, pgq_n),
    ]
    return [(what, a, b) for what, a, b in pairs if a is not None and b is not None]


def run_throughput(
    env: Env, systems: list[System], procs: list[int], backlog: int, runs: int, timeout: float
) -> list[Cell]:
    cells = [Cell(s, p) for p in procs for s in systems]
    for rep in range(runs):
        for cell in cells:
            s = cell.system
            with new_database(env.server, template=env.templates[s.family]) as url:
                load_backlog(env, s, url, backlog)
                load1 = loadavg().split()[0]
                result = drain(env, s, url, backlog, cell.processes, timeout=timeout)
                bad = check_inbox_result(url, s, backlog) if result.ok else ""
                if bad:
                    result.ok, result.note = False, bad
            cell.runs.append(result)
            print(
                f"run {rep + 1}/{runs}  {cell.processes} proc x {s.label:<52}"
                f" {result.rate:>8,.0f}/s  cpu {result.cpu_us:5.0f} us/ev"
                f"  start->empty {result.total:6.1f} s"
                f"  (startup {result.startup:.2f} s, load1 {load1})"
                f"{'  ' + result.note if result.note else ''}",
                flush=True,
            )
    return cells


def render_throughput(cells: list[Cell], backlog: int, runs: int) -> list[str]:
    lines = [
        f"## Processing throughput: {backlog:,}-event backlog",
        "",
        "| procs | system | events/s (median) | range | worker CPU µs/event (median)"
        " | start→empty s (median) | vs pg-inbox (b) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for p in sorted({c.processes for c in cells}):
        group = [c for c in cells if c.processes == p]
        # The reference is pg-inbox (b) at its best configuration in this group.
        ref = max(
            (c.median_rate() for c in group if c.system.name == "inbox-business"), default=0.0
        )
        for c in group:
            rates = c.rates()
            med = c.median_rate()
            rng = f"{min(rates):,.0f}-{max(rates):,.0f}" if rates else "—"
            total = median([r.total for r in c.runs]) if c.runs else 0.0
            ratio = f"{ref / med:.2f}x" if ref and med and c.system.family != "inbox" else "—"
            failed = len(c.runs) - len(rates)
            extra = f" ({failed} failed)" if failed else ""
            lines.append(
                f"| {p} | {c.system.label} | {med:,.0f}{extra} | {rng}"
                f" | {c.median_cpu_us():,.0f} | {total:.1f} | {ratio} |"
            )
    ratios = [
        (p, g)
        for p in sorted({c.processes for c in cells})
        for g in goal_ratios([c for c in cells if c.processes == p])
    ]
    if ratios:
        lines += [
            "",
            "| procs | comparison (each at its best here) | ratio of medians | pair |",
            "|---:|---|---:|---|",
        ]
        for p, (what, a, b) in ratios:
            lines.append(
                f"| {p} | {what} | {a.median_rate() / b.median_rate():.2f}x"
                f" | {a.system.short_label} {a.median_rate():,.0f}/s vs"
                f" {b.system.short_label} {b.median_rate():,.0f}/s |"
            )
    lines += [
        "",
        f"{runs} run(s) per cell, a fresh database per run, cells interleaved. 'vs pg-inbox (b)'"
        " = pg-inbox with its business INSERT ÷ the peer, same process count (>1 means"
        " pg-inbox is faster). Rate = rows finished after the first poll that saw progress ÷"
        " the time from that poll to the poll that saw none (start-up excluded);"
        " start→empty includes interpreter start-up and connecting. Worker CPU = user + system"
        " CPU of the worker processes over the same span ÷ the events counted (PostgreSQL's"
        " own CPU not included).",
    ]
    return lines


# Each system in its best configurations measured here (the sweep figure): pg-inbox with 2
# and 4 claim loops per process, and with 1 for its business INSERT (two processes of one
# loop each drained it faster than two of two on 2 cores: fewer claims walking each other's
# batches), its business rows by a batch handler; PGQueuer with batches of 200 and (asyncpg,
# on uvloop, ~5 % faster still) 1,000, procrastinate with 10; and
# PGQueuer doing pg-inbox's business INSERT in its job through an asyncpg pool, at the pool
# sizes swept (its best depends on the machine, so all of them are in the table).
DEFAULT_THROUGHPUT = (
    "inbox-noop:c=2,inbox-business:c=1,inbox-business:c=2,inbox-business:c=4,inbox-batch:c=2,"
    "pgqueuer-psycopg:b=200,pgqueuer-asyncpg:b=200,pgqueuer-asyncpg:b=1000,"
    "pgqueuer-asyncpg:b=200:p=10,pgqueuer-asyncpg:b=200:p=32,"
    "pgqueuer-asyncpg:b=200:p=64,pgqueuer-asyncpg:b=200:p=90,procrastinate:c=10"
)
DEFAULT_LATENCY = "inbox-noop,pgqueuer-psycopg,pgqueuer-asyncpg,procrastinate:c=1"
DEFAULT_SWEEP = (
    "inbox-noop:c=1,inbox-noop:c=2,inbox-noop:c=4,"
    "pgqueuer-psycopg:b=10,pgqueuer-psycopg:b=50,pgqueuer-psycopg:b=200,"
    "pgqueuer-asyncpg:b=10,pgqueuer-asyncpg:b=50,pgqueuer-asyncpg:b=200,pgqueuer-asyncpg:b=1000,"
    "procrastinate:c=1,procrastinate:c=10,procrastinate:c=50"
)
FIGURES = ("sweep", "throughput", "latency", "scale", "rss", "backlog")


@dataclass
class Plan:
    """What to measure, and at which sizes (the command line's options, parsed)."""

    figures: set[str]
    runs: int = 3
    backlog: int = 50_000
    processes: list[int] = field(default_factory=lambda: [1, 2])
    throughput: list[System] = field(default_factory=list)
    latency: list[System] = field(default_factory=list)
    sweep: list[System] = field(default_factory=list)
    sweep_backlog: int = 10_000
    events: int = 2_000
    gap: tuple[float, float] = (20.0, 80.0)
    histories: list[int] = field(default_factory=lambda: [1_000, 1_000_000])
    scale_backlog: int = 20_000
    claim_reps: int = 30
    rss_events: int = 200_000
    backlogs: list[int] = field(default_factory=lambda: [20_000, 1_000_000])
    timeout: float = 900.0

    @property
    def families(self) -> set[str]:
        return {"inbox"} | {s.family for s in [*self.throughput, *self.latency, *self.sweep]}


@dataclass
class ProcessingResult:
    plan: Plan
    sweep: list[Cell] = field(default_factory=list)
    throughput: list[Cell] = field(default_factory=list)
    latency: list[LatencyCell] = field(default_factory=list)
    scale: list[ScaleRow] = field(default_factory=list)
    rss: RssResult | None = None
    backlogs: list[BacklogRow] = field(default_factory=list)


def measure(env: Env, plan: Plan) -> ProcessingResult:
    """Every figure the plan names, on ``env``'s server and templates."""
    out = ProcessingResult(plan)
    figures = plan.figures
    if "sweep" in figures:
        out.sweep = run_throughput(env, plan.sweep, [1, 2], plan.sweep_backlog, 1, plan.timeout)
    if "throughput" in figures:
        out.throughput = run_throughput(
            env, plan.throughput, plan.processes, plan.backlog, plan.runs, plan.timeout
        )
    if "latency" in figures:
        out.latency = run_latency_cells(env, plan.latency, plan.events, plan.gap, plan.runs)
    if "scale" in figures:
        out.scale = run_scale(
            env, plan.histories, plan.scale_backlog, plan.runs, plan.claim_reps, plan.timeout
        )
    if ("scale" in figures or "rss" in figures) and plan.rss_events > 0:
        out.rss = run_rss(env, plan.rss_events, plan.timeout * 4)
    if "backlog" in figures:
        out.backlogs = run_backlogs(env, plan.backlogs, plan.runs, plan.timeout * 4)
    return out


def render(result: ProcessingResult) -> list[list[str]]:
    """One list of markdown lines per figure measured."""
    plan = result.plan
    sections = []
    if result.sweep:
        lines = render_throughput(result.sweep, plan.sweep_backlog, 1)
        lines[0] = f"## Configuration sweep: {plan.sweep_backlog:,}-event backlog, 1 run"
        sections.append(lines)
    if result.throughput:
        sections.append(render_throughput(result.throughput, plan.backlog, plan.runs))
    if result.latency:
        sections.append(render_latency(result.latency, plan.events, plan.gap))
    if result.scale or result.rss:
        sections.append(render_scale(result.scale, result.rss, plan.scale_backlog, plan.runs))
    if result.backlogs:
        sections.append(render_backlogs(result.backlogs, plan.runs))
    return sections


def parse_gap(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    return float(lo), float(hi or lo)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = command_parser("python -m benchmarks.processing", __doc__)
    p.add_argument("--quick", action="store_true", help="a smoke run at small sizes")
    p.add_argument(
        "--figures",
        default="throughput,latency,scale",
        help=f"comma-separated: {', '.join(FIGURES)} (scale includes rss)",
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
    p.add_argument("--rss-events", type=int, default=200_000, help="0: no RSS figure")
    p.add_argument("--backlogs", default="20000,1000000", help="the backlog figure's sizes")
    p.add_argument("--poll-ms", type=float, default=50.0)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per drain, at most")
    p.add_argument("--peers-python", default=default_peers_python(), help=PEERS_HELP)
    p.add_argument("--out", type=Path, default=OUT_DIR / "processing.md")
    args = p.parse_args(argv)
    if args.quick:
        args.backlog, args.runs, args.events = 2_000, 1, 200
        args.histories, args.scale_backlog, args.rss_events = "1000,100000", 2_000, 5_000
        args.sweep_backlog, args.claim_reps = 2_000, 10
        args.backlogs = "2000,20000"
    return args


def plan_of(args: argparse.Namespace) -> Plan:
    peers = args.peers_python
    return Plan(
        figures={f.strip() for f in args.figures.split(",") if f.strip()},
        runs=args.runs,
        backlog=args.backlog,
        processes=[int(x) for x in args.processes.split(",")],
        throughput=named_systems(args.systems, peers),
        latency=named_systems(args.latency_systems, peers),
        sweep=named_systems(args.sweep_systems, peers),
        sweep_backlog=args.sweep_backlog,
        events=args.events,
        gap=parse_gap(args.gap_ms),
        histories=[int(x) for x in args.histories.split(",")],
        scale_backlog=args.scale_backlog,
        claim_reps=args.claim_reps,
        rss_events=args.rss_events,
        backlogs=[int(x) for x in args.backlogs.split(",")],
        timeout=args.timeout,
    )


def main(argv: Sequence[str] | None = None) -> int:
    report = Report("benchmarks.processing", "# pg-inbox processing benchmark", argv)
    args = parse_args(report.argv)
    plan = plan_of(args)
    peers = f"- peers ({peers_label(args.peers_python)}): {peer_versions(args.peers_python)}"
    with (
        report.server(None, peers) as (server, logs),
        templates_of(server, args.peers_python, plan.families) as templates,
    ):
        env = Env(server, templates, args.peers_python, args.poll_ms / 1000, logs)
        result = measure(env, plan)
    report.finish(args.out, render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
