"""What observability costs: the queue gauges' query by backlog size, and the tracing hooks
per call with OpenTelemetry absent, with the API but no SDK, and with the SDK.

``python -m benchmarks observability [--backlogs 10000,100000,1000000] [--runs 3]``

The queue gauges (processors/_worker/queue_gauges.py) run one query per scrape interval in each
worker process that is scraped; its cost grows with the work table (the events' table is
read by primary key only). The hooks run once per webhook (the receipt span, the writer's
stored context) and once per handler run (the handler span); a host that set up no SDK
should pay close to nothing. Each figure is the median of ``--runs`` runs; the hooks are
timed in child processes, because the SDK's provider can be set only once per process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from benchmarks._common import child_env, median
from benchmarks._report_frame import Driver
from inbox._core.database import migrate
from inbox._core.sql import load_queries
from inbox.testing import new_database

QUEUE_GAUGES = load_queries("processors.sql", "queries.sql")["queue_gauges"]
SOURCES = 8
MODES = ("off", "api", "sdk")
HOOK_NAMES = ("handler span", "stored context")

# Run in a child: time the hooks ``number`` times each, print "name microseconds" lines.
HOOKS = """
import sys, timeit
from datetime import UTC, datetime
mode = sys.argv[1]
if mode != "off":
    from opentelemetry import trace
    if mode == "sdk":
        from opentelemetry.sdk.trace import TracerProvider
        trace.set_tracer_provider(TracerProvider())
from inbox._core.tracing import current_trace_context
from processors._model.claimed import Claimed, ClaimedEvent
from processors._model.event import Event
from processors._running.tracing import handler_span
event = Event.model_construct(
    id=1, source="s", key="k", type="t", received_at=datetime.now(UTC), headers={},
    body=b"{}", attempt=1, is_replay=False, replay_id=None,
)
item = ClaimedEvent(
    Claimed(1, 0, 0, None),
    event,
    traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    tracestate="vendor=value",
)
def handler_run():
    with handler_span([item], "h"):
        pass
number = 20000
for name, hook in (("handler span", handler_run), ("stored context", current_trace_context)):
    best = min(timeit.repeat(hook, number=number, repeat=5)) / number
    print(name, round(best * 1e6, 2))
"""


def fill(conn: psycopg.Connection[object], start: int, end: int) -> None:
    """Events start+1..end, each with its work row (a backlog nobody has processed)."""
    conn.execute(
        "with keyed as ("
        " insert into inbox_keys (source, idempotency_key, body_sha256)"
        " select 's' || (i %% %(sources)s), 'k' || i, sha256(('k' || i)::bytea)"
        " from generate_series(%(start)s::int, %(end)s::int) i order by i"
        " returning event_id, received_at, source, idempotency_key, body_sha256)"
        " insert into inbox_events"
        " (id, received_at, source, idempotency_key, headers, body, body_sha256)"
        " select event_id, received_at, source, idempotency_key, '{}', '\\x7b7d', body_sha256"
        " from keyed",
        {"sources": SOURCES, "start": start + 1, "end": end},
    )
    conn.execute(
        "insert into inbox_work (event_id, received_at)"
        " select id, received_at from inbox_events where id > %s",
        [start],
    )
    conn.execute("vacuum analyze inbox_events")
    conn.execute("vacuum analyze inbox_work")


def queue_gauges(server: str, backlogs: Sequence[int], runs: int) -> list[tuple[int, float]]:
    """(work rows, the gauges query's median ms) at each backlog, filled one after another."""
    results = []
    with new_database(server) as url:
        migrate.upgrade(url)
        with psycopg.connect(url, autocommit=True) as conn:
            done = 0
            for backlog in backlogs:
                fill(conn, done, backlog)
                done = backlog
                times = []
                for _ in range(runs):
                    started = time.perf_counter()
                    conn.execute(QUEUE_GAUGES).fetchall()
                    times.append(time.perf_counter() - started)
                results.append((backlog, median(times) * 1000))
                print(f"queue gauges at {backlog:,} work rows: {results[-1][1]:.1f} ms", flush=True)
    return results


def hooks(runs: int) -> dict[tuple[str, str], float]:
    """Microseconds per call of each hook in each mode (median of ``runs`` child runs)."""
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):
        for mode in MODES:
            out = subprocess.run(
                [sys.executable, "-c", HOOKS, mode],
                env=child_env(),
                capture_output=True,
                text=True,
                check=True,
                timeout=300,
            ).stdout
            for line in out.splitlines():
                name, _, micros = line.rpartition(" ")
                samples.setdefault((name, mode), []).append(float(micros))
    return {key: median(values) for key, values in samples.items()}


@dataclass
class ObservabilityResult:
    gauges: list[tuple[int, float]]  # (work rows, query ms)
    hooks: dict[tuple[str, str], float]  # (hook, mode) -> microseconds per call
    runs: int


def measure(server: str, args: argparse.Namespace, logs: Path) -> ObservabilityResult:
    backlogs = sorted(int(n) for n in args.backlogs.split(","))
    return ObservabilityResult(
        queue_gauges(server, backlogs, args.runs), hooks(args.runs), args.runs
    )


def render(result: ObservabilityResult) -> list[str]:
    lines = [
        "## What observability costs: the queue gauges' query, and the tracing hooks per call",
        "",
        "| work rows | queue gauges query ms (median) |",
        "|---:|---:|",
        *(f"| {backlog:,} | {millis:.1f} |" for backlog, millis in result.gauges),
        "",
        "| hook, µs per call (median) | " + " | ".join(MODES) + " | sdk ÷ off |",
        "|---|" + "---:|" * (len(MODES) + 1),
    ]
    for name in HOOK_NAMES:
        row = [result.hooks[(name, mode)] for mode in MODES]
        lines.append(
            f"| {name} | " + " | ".join(f"{v:.2f}" for v in row) + f" | {row[-1] / row[0]:.0f}x |"
        )
    lines += [
        "",
        f"{result.runs} run(s) each. The gauges: one query per scrape interval in each scraped"
        f" worker process, over {SOURCES} sources' work rows (set-based backlog, VACUUM ANALYZE"
        " after each fill). The hooks: the best of 5 repeats of 20,000 calls in a child"
        " process per mode: OpenTelemetry absent (off), the API without an SDK (api), the SDK's"
        " TracerProvider set (sdk).",
    ]
    return lines


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backlogs", default="10000,100000,1000000", help="work rows, in order")


DRIVER = Driver("observability", __doc__, _options, measure, render)
