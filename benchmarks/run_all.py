"""``python -m benchmarks all``: every figure of benchmarks/RESULTS.md on one PostgreSQL
server, one report.

    pip install -e '.[dev,bench]'                    # matplotlib, for the chart
    python -m benchmarks peers-env                   # the peers, pinned by benchmarks/peers.txt
    python -m benchmarks all                         # the full sizes: a few hours on 2 cores
    python -m benchmarks all --quick --out benchmarks/out/RESULTS.md \
        --chart benchmarks/out/results.png           # a smoke run of every figure, minutes
    python -m benchmarks all --figures storm,ordering       # some figures only
    python -m benchmarks all --skip receiver-rss,backlog    # all but the longest

Run from the repository's root, with the project's environment's ``python`` (the commands
the report writes are in that form).

Runs, in order, on one server (the embedded PostgreSQL, or ``INBOX_BENCH_DATABASE_URL``),
each figure named as --figures and --skip name it:

1. ``ingest``: AsyncInboxWriter / InboxWriter vs pgbench at --writers (``ingest``);
2. ``http``: `inbox serve` vs a hand-written receiver at --http-concurrency
   (``receiver_load``);
2b. ``receiver-rss``: `inbox serve`'s RSS over --rss-requests requests (``receiver_rss``);
3. ``throughput``: a --backlog drained by 1 and 2 worker processes, pg-inbox (no-op,
   business INSERT) beside PGQueuer and procrastinate (``processing``);
4. ``latency``: wake latency at idle, --events writes per system and run (``processing``);
5. ``scale``: the claim with --histories rows of history, and worker RSS over --rss-events
   (``processing``; --rss-events 0 leaves RSS out);
5b. ``backlog``: one worker drains each of --backlogs (``processing``);
6. ``storm``: --copies concurrent deliveries of each of --keys keys (``storm``);
7. ``ordering``: an ordered source's backlog beside the same backlog unordered
   (``ordering``);
8. ``observability``: the queue gauges' query at --gauge-backlogs work rows, and the
   tracing hooks per call (``observability``).

Each figure runs from its own command line, the one its section prints: ``all`` builds it
from its sizes and hands it to the figure's driver, which parses it as it would alone. Each
figure is the median of --runs runs (the RSS figures: one run). It prints each figure's
progress, then the report: a headline of the key ratios and each figure's section. The report
goes to stdout and --out, followed in --out by the hand-written analysis
(benchmarks/ANALYSIS.md); the chart goes to --chart. A figure that fails is reported as FAILED
and the others still run. --quick runs every figure at tiny sizes, once (a smoke run); a size
given explicitly wins over --quick.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import ingest, observability, ordering, processing, receiver_load, receiver_rss
from benchmarks import storm as storm_driver
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
from benchmarks._peers import PEERS_HELP, default_peers_python, peer_versions, peers_label
from benchmarks._report import FIGURES, AllResults, Section, document
from benchmarks._report_frame import Driver, command_parser
from benchmarks._systems import Env, templates_of

HERE = Path(__file__).resolve().parent

# The sizes, by the figure they size: option -> (a full run's, a smoke run's, what it is).
# Every size option defaults to None, so that a size given on the command line wins over
# --quick; its type is its full value's.
SIZES: dict[str, dict[str, tuple[Any, Any, str]]] = {
    "every figure": {"runs": (3, 1, "runs, the median reported")},
    "ingest": {
        "writers": ("1,16,64", "1,16,64", "concurrent writers"),
        "duration": (5.0, 0.5, "measured seconds per run"),
        "warmup": (0.3, 0.1, "unmeasured seconds first"),
    },
    "http": {
        "http_requests": (6_000, 300, "requests per run"),
        "http_concurrency": ("16,64", "16,64", "connections"),
    },
    "receiver-rss": {
        "rss_requests": (1_000_000, 2_000, "requests"),
        "rss_chunk": (50_000, 500, "requests per RSS sample"),
    },
    "throughput": {
        # 20,000 events drain in about a second on a quiet machine: too short to time. A
        # smoke run's: the fastest peer must take a few polls to drain it.
        "backlog": (100_000, 2_000, "backlog"),
        "processes": ("1,2", "1,2", "worker processes"),
    },
    "latency": {"events": (2_000, 60, "writes per run")},
    "scale": {
        "histories": ("1000,1000000", "1000,10000", "history rows"),
        "scale_backlog": (20_000, 1_000, "backlog drained"),
        "claim_reps": (30, 10, "claims timed per run"),
        "rss_events": (1_000_000, 2_000, "worker RSS over events, 0: none"),
    },
    "backlog": {"backlogs": ("20000,1000000", "2000,5000", "the backlogs drained")},
    "storm": {"keys": (1_000, 20, "distinct keys"), "copies": (100, 5, "copies of each key")},
    "ordering": {
        "ordering_backlog": (20_000, 1_000, "backlog"),
        "hot_backlog": (4_000, 200, "the hot keys' backlog"),
    },
    "observability": {"gauge_backlogs": ("10000,100000,1000000", "1000,10000", "work rows")},
}
# The drivers of the figures that are not processing's, by the name on their command line.
DRIVERS: dict[str, Driver[Any]] = {
    "ingest": ingest.DRIVER,
    "receiver_load": receiver_load.DRIVER,
    "receiver_rss": receiver_rss.DRIVER,
    "storm": storm_driver.DRIVER,
    "ordering": ordering.DRIVER,
    "observability": observability.DRIVER,
}


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = command_parser("python -m benchmarks all", __doc__)
    p.add_argument("--quick", action="store_true", help="every figure at tiny sizes, one run")
    p.add_argument("--out", type=Path, default=HERE / "RESULTS.md", help="the report")
    p.add_argument("--chart", type=Path, default=HERE / "results.png", help="the PNG chart")
    p.add_argument("--analysis", type=Path, default=HERE / "ANALYSIS.md", help="appended prose")
    p.add_argument(
        "--figures", default=",".join(FIGURES), help=f"comma-separated: {', '.join(FIGURES)}"
    )
    p.add_argument("--skip", default="", help="comma-separated figures to leave out")
    for figure, sizes in SIZES.items():
        group = p.add_argument_group(f"{figure}: sizes (a full run's / --quick's)")
        for name, (full, quick, what) in sizes.items():
            shown = "/".join(f"{v:,}" if isinstance(v, int) else f"{v}" for v in (full, quick))
            group.add_argument(
                f"--{name.replace('_', '-')}", type=type(full), help=f"{what} ({shown})"
            )
    more = p.add_argument_group("more")
    more.add_argument("--storm-concurrency", type=int, default=64, help="storm: connections")
    more.add_argument("--gap-ms", default="20-80", help="latency: gap between writes")
    more.add_argument("--poll-ms", type=float, help="processing: the drain's poll (its 50)")
    more.add_argument("--timeout", type=float, help="seconds per drain, at most (each figure's)")
    more.add_argument("--peers-python", default=default_peers_python(), help=PEERS_HELP)
    args = p.parse_args(argv)
    for sizes in SIZES.values():
        for name, (full, quick, _what) in sizes.items():
            if getattr(args, name) is None:
                setattr(args, name, quick if args.quick else full)
    asked, skipped = _names(args.figures), _names(args.skip)
    unknown = set(asked + skipped) - set(FIGURES)
    if unknown:
        p.error(f"unknown figures: {', '.join(sorted(unknown))}; known: {', '.join(FIGURES)}")
    args.selected = [key for key in FIGURES if key in asked and key not in skipped]
    return args


def figure_argv(args: argparse.Namespace) -> dict[str, list[str]]:
    """Each figure's own command line (after ``python -m benchmarks``) at this run's sizes:
    what its section prints, and what its driver parses (no value holds a space)."""
    a = args
    runs = f"--runs {a.runs}"
    poll = f" --poll-ms {a.poll_ms:g}" if a.poll_ms is not None else ""
    timeout = f" --timeout {a.timeout:g}" if a.timeout is not None else ""
    text = {
        "ingest": f"ingest {runs} --writers {a.writers} --duration {a.duration:g}"
        f" --warmup {a.warmup:g}",
        "http": f"receiver_load {runs} --requests {a.http_requests}"
        f" --concurrency {a.http_concurrency.replace(',', ' ')}",
        "receiver-rss": f"receiver_rss --requests {a.rss_requests} --chunk {a.rss_chunk}",
        "throughput": f"processing --figures throughput {runs} --backlog {a.backlog}"
        f" --processes {a.processes}{poll}{timeout}",
        "latency": f"processing --figures latency {runs} --events {a.events}"
        f" --gap-ms {a.gap_ms}{poll}",
        "scale": f"processing --figures scale {runs} --histories {a.histories}"
        f" --scale-backlog {a.scale_backlog} --claim-reps {a.claim_reps}"
        f" --rss-events {a.rss_events}{poll}{timeout}",
        "backlog": f"processing --figures backlog {runs} --backlogs {a.backlogs}{poll}{timeout}",
        "storm": f"storm {runs} --keys {a.keys} --copies {a.copies}"
        f" --concurrency {a.storm_concurrency}{timeout}",
        "ordering": f"ordering {runs} --backlog {a.ordering_backlog} --hot-backlog {a.hot_backlog}",
        "observability": f"observability {runs} --backlogs {a.gauge_backlogs}",
    }
    return {key: line.split() for key, line in text.items()}


def checkout() -> str:
    """The commit measured, and whether the work tree differed from it."""

    def git(*a: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(REPO), *a], capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "?"
    return f"{commit}{' + uncommitted changes' if git('status', '--porcelain') else ''}"


class Figures:
    """Runs the figures of one ``all`` on one server: each from its own command line, the
    templates of the processing figures and the storm made once, when first needed."""

    def __init__(
        self, args: argparse.Namespace, server: str, logs: Path, stack: contextlib.ExitStack
    ) -> None:
        self.args, self.server, self.logs, self._stack = args, server, logs, stack
        self.argv = figure_argv(args)
        self._templates: dict[str, str] | None = None

    def _processing_args(self, key: str) -> argparse.Namespace:
        parsed = processing.parse_args(self.argv[key][1:])
        parsed.peers_python = self.args.peers_python  # the report's header names it
        return parsed

    def templates(self) -> dict[str, str]:
        """A migrated template for each family the selected figures run (pg-inbox's with
        the business table, for the storm too)."""
        if self._templates is None:
            families = {"inbox"}
            for key in self.args.selected:
                if self.argv[key][0] == "processing":
                    families |= processing.plan_of(self._processing_args(key)).families
            peers = self.args.peers_python
            self._templates = self._stack.enter_context(templates_of(self.server, peers, families))
        return self._templates

    def measure(self, key: str, results: AllResults) -> list[str]:
        """Run figure ``key``, keep its result in ``results``; its section's lines."""
        name, *rest = self.argv[key]
        if name == "processing":
            parsed = self._processing_args(key)
            env = Env(
                self.server, self.templates(), parsed.peers_python, parsed.poll_ms / 1000, self.logs
            )
            result = processing.measure(env, processing.plan_of(parsed))
            results.processing[key] = result
            return next(iter(processing.render(result)), [])
        driver = DRIVERS[name]
        parsed = driver.parse_args(rest)
        if driver is storm_driver.DRIVER:
            found = storm_driver.measure(
                self.server, parsed, self.logs, template=self.templates()["inbox"]
            )
        else:
            found = driver.measure(self.server, parsed, self.logs)
        setattr(results, FIGURES[key].result, found)
        return driver.render(found)

    def run(self, key: str, results: AllResults) -> None:
        """Run one figure, noting the load around it; a failure is reported, not raised."""
        command = command_line("benchmarks", self.argv[key])
        figure = FIGURES[key]
        print(f"\n=== {figure.number}. {figure.title}: {command}", flush=True)
        section = Section(command, load_before=loadavg())
        results.sections[key] = section
        started = time.monotonic()
        try:
            section.lines = self.measure(key, results)
        except Exception:  # noqa: BLE001 - one figure's failure must not cost the others' hour
            section.error = traceback.format_exc()
            print(section.error, file=sys.stderr, flush=True)
        section.seconds = time.monotonic() - started
        section.load_after = loadavg()


def main(argv: Sequence[str] | None = None) -> int:
    stop_cleanly_on_signals()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    started, load_before = time.monotonic(), loadavg()
    with (
        postgres_server() as (server, where),
        tempfile.TemporaryDirectory(prefix="inbox-bench-all-") as logs,
        contextlib.ExitStack() as stack,
    ):
        facts = server_facts(server)
        header = [
            *run_facts(command_line("benchmarks", ["all", *argv]), facts, where),
            f"- measured: pg-inbox at commit {checkout()};"
            f" peers ({peers_label(args.peers_python)}): {peer_versions(args.peers_python)}",
        ]
        print("\n".join(header), flush=True)
        results = AllResults(header)
        figures = Figures(args, server, Path(logs), stack)
        for key in args.selected:
            figures.run(key, results)
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
