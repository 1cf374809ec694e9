"""``python -m benchmarks all``: every figure of issue 6 on one PostgreSQL server, one report.

    pip install -e '.[dev,bench]'                    # matplotlib, for the chart
    python -m benchmarks peers-env                   # the peers, pinned by benchmarks/peers.txt
    python -m benchmarks all                         # the issue's sizes: about 50 min on 2 cores
    python -m benchmarks all --quick --out benchmarks/out/RESULTS.md \
        --chart benchmarks/out/results.png           # a smoke run, ~3 min

Run from the repository's root, with the project's environment's ``python`` (the commands
the report writes are in that form).

Runs, in order, on one server (the embedded PostgreSQL, or ``INBOX_BENCH_DATABASE_URL``):

1. library ingest: AsyncInboxWriter / InboxWriter vs pgbench at --writers (``ingest``);
2. HTTP ingest: `inbox serve` vs a no-op endpoint at --http-concurrency (``receiver_load``);
3. processing throughput: a --backlog drained by 1 and 2 worker processes, pg-inbox (no-op,
   business INSERT) beside PGQueuer and procrastinate (``processing``);
4. wake latency at idle, --events writes per system and run (``processing``);
5. scale: the claim with --histories rows of history, and worker RSS over --rss-events
   (``processing``; --rss-events 0 leaves RSS out, it is the slowest part);
6. duplicate storm: --copies concurrent deliveries of each of --keys keys (``storm``).

Each figure is the median of --runs runs (RSS: one run). It prints each figure's progress,
then the report: a headline of the key ratios and each figure's section with the command
that repeats it alone. The report goes to stdout and --out, followed in --out by the
hand-written analysis (benchmarks/ANALYSIS.md); the chart goes to --chart. A figure that
fails is reported as FAILED and the others still run. --quick runs tiny sizes once (a smoke
run); a size given explicitly wins over --quick.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import ingest, receiver_load, storm
from benchmarks._chart import write_chart
from benchmarks._common import (
    REPO,
    command_line,
    loadavg,
    machine,
    postgres_server,
    run_facts,
    server_facts,
    stop_cleanly_on_signals,
)
from benchmarks._latency import run_latency_cells
from benchmarks._peers import PEERS_HELP, default_peers_python, peer_versions, peers_label
from benchmarks._report import FIGURES, AllResults, Section, document
from benchmarks._report_frame import command_parser
from benchmarks._scale import run_rss, run_scale
from benchmarks._systems import (
    Env,
    named_systems,
    templates_of,
)
from benchmarks.processing import DEFAULT_LATENCY, DEFAULT_THROUGHPUT, Plan, run_throughput

HERE = Path(__file__).resolve().parent

# The sizes, and a smoke run's. Every size option defaults to None so that a size
# given on the command line wins over --quick.
FULL = {
    "runs": 3,
    "writers": "1,16,64",
    "duration": 5.0,
    "warmup": 0.3,
    "http_requests": 3_000,
    "http_concurrency": "16,64",
    "backlog": 50_000,
    "processes": "1,2",
    "events": 2_000,
    "histories": "1000,1000000",
    "scale_backlog": 20_000,
    "claim_reps": 30,
    "rss_events": 1_000_000,
    "keys": 1_000,
    "copies": 100,
}
QUICK = {
    **FULL,
    "runs": 1,
    "duration": 0.5,
    "warmup": 0.1,
    "http_requests": 300,
    "backlog": 2_000,  # the fastest peer must take a few polls to drain it
    "events": 60,
    "histories": "1000,10000",
    "scale_backlog": 1_000,
    "claim_reps": 10,
    "rss_events": 2_000,
    "keys": 20,
    "copies": 5,
}


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = command_parser("python -m benchmarks all", __doc__)
    p.add_argument("--quick", action="store_true", help="tiny sizes, one run: a smoke run")
    p.add_argument("--runs", type=int, help="runs per figure, the median reported (3)")
    p.add_argument("--out", type=Path, default=HERE / "RESULTS.md", help="the report")
    p.add_argument("--chart", type=Path, default=HERE / "results.png", help="the PNG chart")
    p.add_argument("--analysis", type=Path, default=HERE / "ANALYSIS.md", help="appended prose")
    p.add_argument(
        "--figures",
        default=",".join(FIGURES),
        help=f"comma-separated subset of: {', '.join(FIGURES)}",
    )
    size = p.add_argument_group("sizes (the issue's by default)")
    size.add_argument("--writers", help="ingest: concurrent writers (1,16,64)")
    size.add_argument("--duration", type=float, help="ingest: measured seconds per run (5)")
    size.add_argument("--warmup", type=float, help="ingest: unmeasured seconds first (0.3)")
    size.add_argument("--http-requests", type=int, help="HTTP: requests per run (3,000)")
    size.add_argument("--http-concurrency", help="HTTP: connections (16,64)")
    size.add_argument("--backlog", type=int, help="throughput: backlog (50,000)")
    size.add_argument("--processes", help="throughput: worker processes (1,2)")
    size.add_argument("--events", type=int, help="wake latency: writes per run (2,000)")
    size.add_argument("--histories", help="scale: history rows (1000,1000000)")
    size.add_argument("--scale-backlog", type=int, help="scale: backlog drained (20,000)")
    size.add_argument("--claim-reps", type=int, help="scale: claims timed per run (30)")
    size.add_argument("--rss-events", type=int, help="scale: RSS over events, 0: none (1,000,000)")
    size.add_argument("--keys", type=int, help="storm: distinct keys (1,000)")
    size.add_argument("--copies", type=int, help="storm: deliveries of each key (100)")
    more = p.add_argument_group("more")
    more.add_argument("--storm-concurrency", type=int, default=64, help="storm: connections")
    more.add_argument("--gap-ms", default="20-80", help="wake latency: gap between writes")
    more.add_argument("--poll-ms", type=float, default=50.0, help="drain: poll interval")
    more.add_argument("--timeout", type=float, default=900.0, help="seconds per drain, at most")
    more.add_argument("--peers-python", default=default_peers_python(), help=PEERS_HELP)
    args = p.parse_args(argv)
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    unknown = set(args.figures.split(",")) - set(FIGURES)
    if unknown:
        p.error(f"unknown figures: {', '.join(sorted(unknown))}")
    return args


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def plan_of(args: argparse.Namespace) -> Plan:
    lo, _, hi = args.gap_ms.partition("-")
    figures = set(args.figures.split(","))
    peers = args.peers_python
    # Only the figures that run make templates for their peers.
    return Plan(
        figures=figures,
        runs=args.runs,
        backlog=args.backlog,
        processes=_ints(args.processes),
        throughput=named_systems(DEFAULT_THROUGHPUT, peers) if "throughput" in figures else [],
        latency=named_systems(DEFAULT_LATENCY, peers) if "latency" in figures else [],
        events=args.events,
        gap=(float(lo), float(hi or lo)),
        histories=_ints(args.histories),
        scale_backlog=args.scale_backlog,
        claim_reps=args.claim_reps,
        rss_events=args.rss_events,
        timeout=args.timeout,
    )


def figure_commands(args: argparse.Namespace) -> dict[str, str]:
    """The command that repeats each figure alone, at this run's sizes."""
    a = args
    runs = f"--runs {a.runs}"
    argv = {
        "ingest": f"ingest {runs} --writers {a.writers} --duration {a.duration:g}"
        f" --warmup {a.warmup:g}",
        "http": f"receiver_load {runs} --requests {a.http_requests}"
        f" --concurrency {a.http_concurrency.replace(',', ' ')}",
        "throughput": f"processing --figures throughput {runs} --backlog {a.backlog}"
        f" --processes {a.processes}",
        "latency": f"processing --figures latency {runs} --events {a.events} --gap-ms {a.gap_ms}",
        "scale": f"processing --figures scale {runs} --histories {a.histories}"
        f" --scale-backlog {a.scale_backlog} --claim-reps {a.claim_reps}"
        f" --rss-events {a.rss_events}",
        "storm": f"storm {runs} --keys {a.keys} --copies {a.copies}"
        f" --concurrency {a.storm_concurrency}",
    }
    return {key: command_line("benchmarks", text.split()) for key, text in argv.items()}


def checkout() -> str:
    """The commit measured, and whether the work tree differed from it."""

    def git(*a: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(REPO), *a], capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "?"
    return f"{commit}{' + uncommitted changes' if git('status', '--porcelain') else ''}"


def run_figure(results: AllResults, key: str, command: str, measure: Callable[[], None]) -> None:
    """Run one figure, noting the load around it; a failure is reported, not raised."""
    number = list(FIGURES).index(key) + 1
    print(f"\n=== {number}. {FIGURES[key]}: {command}", flush=True)
    section = Section(command, load_before=loadavg())
    results.sections[key] = section
    started = time.monotonic()
    try:
        measure()
    except Exception:  # noqa: BLE001 - one figure's failure must not cost the others' hour
        section.error = traceback.format_exc()
        print(section.error, file=sys.stderr, flush=True)
    section.seconds = time.monotonic() - started
    section.load_after = loadavg()


def measure_all(args: argparse.Namespace, server: str, results: AllResults, logs: Path) -> None:
    plan, commands, figures = results.plan, figure_commands(args), results.plan.figures

    def ingest_figure() -> None:
        results.ingest = ingest.measure(
            server,
            writers=_ints(args.writers),
            runs=args.runs,
            timing=ingest.Timing(args.warmup, args.duration),
        )

    def http_figure() -> None:
        results.http = receiver_load.measure(
            server,
            requests=args.http_requests,
            runs=args.runs,
            concurrency=_ints(args.http_concurrency),
            logs=logs,
        )

    if "ingest" in figures:
        run_figure(results, "ingest", commands["ingest"], ingest_figure)
    if "http" in figures:
        run_figure(results, "http", commands["http"], http_figure)
    with templates_of(server, args.peers_python, plan.families) as templates:
        env = Env(server, templates, args.peers_python, args.poll_ms / 1000, logs)

        def throughput_figure() -> None:
            results.throughput = run_throughput(
                env, plan.throughput, plan.processes, plan.backlog, plan.runs, plan.timeout
            )

        def latency_figure() -> None:
            results.latency = run_latency_cells(env, plan.latency, plan.events, plan.gap, plan.runs)

        def scale_figure() -> None:
            results.scale = run_scale(
                env, plan.histories, plan.scale_backlog, plan.runs, plan.claim_reps, plan.timeout
            )
            if plan.rss_events > 0:
                results.rss = run_rss(env, plan.rss_events, plan.timeout * 4)

        def storm_figure() -> None:
            results.storm = storm.measure(
                server,
                keys=args.keys,
                copies=args.copies,
                runs=args.runs,
                concurrency=args.storm_concurrency,
                logs=logs,
                timeout=args.timeout,
                template=templates["inbox"],
            )

        for key, figure in (
            ("throughput", throughput_figure),
            ("latency", latency_figure),
            ("scale", scale_figure),
            ("storm", storm_figure),
        ):
            if key in figures:
                run_figure(results, key, commands[key], figure)


def main(argv: Sequence[str] | None = None) -> int:
    stop_cleanly_on_signals()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    started, load_before = time.monotonic(), loadavg()
    with (
        postgres_server() as (server, where),
        tempfile.TemporaryDirectory(prefix="inbox-bench-all-") as logs,
    ):
        facts = server_facts(server)
        header = [
            *run_facts(command_line("benchmarks", ["all", *argv]), facts, where),
            f"- measured: pg-inbox at commit {checkout()};"
            f" peers ({peers_label(args.peers_python)}): {peer_versions(args.peers_python)}",
        ]
        print("\n".join(header), flush=True)
        results = AllResults(header, plan_of(args))
        measure_all(args, server, results, Path(logs))
    quick = " (--quick: a smoke run, not figures to quote)" if args.quick else ""
    header.append(
        f"- load average (1/5/15 min): {load_before} before, {loadavg()} after; wall time"
        f" {time.monotonic() - started:.0f} s; {args.runs} run(s) per figure{quick}"
    )
    date = dt.datetime.now(dt.UTC).date().isoformat()
    subtitle = f"PostgreSQL {facts['server_version']}, {machine()}, {date}"
    drawn = write_chart(results, args.chart, subtitle)
    chart = os.path.relpath(args.chart, args.out.parent) if drawn else None
    analysis = args.analysis.read_text(encoding="utf-8") if args.analysis.exists() else ""
    print("\n" + document(results, chart=chart, analysis=""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(document(results, chart=chart, analysis=analysis), encoding="utf-8")
    print(f"written to {args.out}" + (f" and {args.chart}" if drawn else ""))
    return 1 if any(s.error for s in results.sections.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
