"""What observability costs: the queue gauges' query by backlog size, and the tracing hooks
per call with OpenTelemetry absent, with the API but no SDK, and with the SDK.

``python -m benchmarks observability [--backlogs 10000,100000,1000000] [--runs 3]``

The queue gauges (processors/_queue_gauges.py) run one query per scrape interval in each
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

import psycopg

from benchmarks._common import child_env, fresh_database, median, postgres_server
from inbox._core import migrate
from inbox._core.sql import load_queries

QUEUE_GAUGES = load_queries("processors.sql", "queries.sql")["queue_gauges"]
SOURCES = 8
MODES = ("off", "api", "sdk")

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
from inbox._core.tracing import current_traceparent
from processors._decide import Claimed
from processors._event import Event
from processors._store import ClaimedEvent
from processors._tracing import handler_span
event = Event.model_construct(
    id=1, source="s", key="k", type="t", received_at=datetime.now(UTC), headers={},
    body=b"{}", attempt=1, is_replay=False, replay_id=None,
)
item = ClaimedEvent(
    Claimed(1, 0, 0, None), event, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)
def handler_run():
    with handler_span(item, "h"):
        pass
number = 20000
for name, hook in (("handler span", handler_run), ("stored context", current_traceparent)):
    best = min(timeit.repeat(hook, number=number, repeat=5)) / number
    print(name, round(best * 1e6, 2))
"""


def fill(conn: psycopg.Connection[object], start: int, end: int) -> None:
    """Events start+1..end, each with its work row (a backlog nobody has processed)."""
    conn.execute(
        "insert into inbox_events (source, idempotency_key, headers, body, body_sha256)"
        " select 's' || (i %% %(sources)s), 'k' || i, '{}', '\\x7b7d', sha256(('k' || i)::bytea)"
        " from generate_series(%(start)s::int, %(end)s::int) i",
        {"sources": SOURCES, "start": start + 1, "end": end},
    )
    conn.execute(
        "insert into inbox_work (event_id) select id from inbox_events where id > %s", [start]
    )
    conn.execute("vacuum analyze inbox_events")
    conn.execute("vacuum analyze inbox_work")


def queue_gauges(server: str, backlogs: Sequence[int], runs: int) -> list[tuple[int, float]]:
    results = []
    with fresh_database(server) as url:
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
    return results


def hooks(runs: int) -> dict[tuple[str, str], float]:
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


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks observability")
    parser.add_argument("--backlogs", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    backlogs = sorted(int(n) for n in args.backlogs.split(","))
    with postgres_server() as (server, where):
        gauges = queue_gauges(server, backlogs, args.runs)
    costs = hooks(args.runs)
    print(f"Queue gauges query ({where}; {SOURCES} sources; median of {args.runs}):")
    print("| work rows | query ms |\n|---:|---:|")
    for backlog, millis in gauges:
        print(f"| {backlog:,} | {millis:.1f} |")
    print(f"\nTracing hooks, microseconds per call (median of {args.runs} runs):")
    print("| hook | " + " | ".join(MODES) + " | sdk / off |\n|---|" + "---:|" * (len(MODES) + 1))
    for name in ("handler span", "stored context"):
        row = [costs[(name, mode)] for mode in MODES]
        print(
            f"| {name} | " + " | ".join(f"{v:.2f}" for v in row) + f" | {row[-1] / row[0]:.0f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
