"""The operator console's queries on a large inbox: server time per page, p50/p99.

    python -m benchmarks console                 # 1,000,000 events, 3,000,000 attempts
    python -m benchmarks console --events 20000  # a quick run at a small size

The database is filled in SQL (generate_series, one statement per table): ``--events``
events over ``--days`` days across ``--sources`` sources, three attempts each (two failures,
then success), a repeat delivery for every tenth event (every other one with a different
body), dead letters, pending work and a replay run. Then the operator API behind each page
is called over one open connection, as the console calls it from its pool:

- events list, first page, and a deep page (by cursor, near the oldest event);
- search by a provider key alone (in any of the sources) and by ``SOURCE:KEY``;
- event detail (deliveries, attempts, replays);
- overview: ``status`` over every source plus the hour's and the day's activity series.

Each call is timed ``--calls`` times per run (different events each time), ``--runs``
runs; the table quotes the median over runs of each run's p50 and p99. With ``--pages``,
the console's pages are timed the same way through its ASGI app in-process (httpx's
ASGITransport, signed in as an operator), when ``inbox.console`` is installed.

The database is ``INBOX_BENCH_DATABASE_URL`` (a maintenance database; the benchmark creates
and drops its own), else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from benchmarks._common import (
    OUT_DIR,
    median,
    percentile,
)
from benchmarks._report_frame import Report, command_parser
from inbox import queries
from inbox._core.database import migrate as _migrate
from inbox.queries import EventFilter
from inbox.testing import new_database

GOAL_P99_MS = 100.0

# The fill, one statement per table. Event g (1..events) is received at a steady rate over
# the window, so the newest day holds events/days of them; its id is g (a fresh table).
FILL_EVENTS = """
with made as (
    select g,
           'source' || lpad((g %% %(sources)s)::text, 3, '0') as source,
           'evt_' || g as idempotency_key,
           now() - make_interval(secs => (%(events)s - g) * %(spacing)s::float8) as received_at,
           convert_to(
               '{"id": "evt_' || g || '", "type": "invoice.paid", "data": {"object": {"id":'
               || ' "in_' || md5(g::text) || '", "amount_due": ' || (g %% 10000)
               || ', "currency": "usd", "customer": "cus_'
               || substr(md5((g * 7)::text), 1, 14) || '"}}}', 'UTF8'
           ) as body
    from generate_series(1, %(events)s) g
),
keyed as (
    -- As the writer appends: the key first, which draws the id (g, on a fresh table).
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    select source, idempotency_key, received_at, sha256(body) from made order by g
    returning event_id, source, idempotency_key
)
insert into inbox_events
    (id, source, idempotency_key, event_type, received_at, headers, body, body_sha256)
select k.event_id, m.source, m.idempotency_key,
       (array['invoice.paid', 'invoice.failed', 'charge.succeeded', 'customer.updated'])
           [1 + (m.g / 7) %% 4],
       m.received_at,
       '{"content-type": "application/json", "user-agent": "Provider/1.0"}'::jsonb,
       m.body,
       sha256(m.body)
from keyed k
join made m using (source, idempotency_key)
order by k.event_id
"""

# The log's partitions of the window (an import makes them as it goes).
PARTITIONS = """
select count(*)
from generate_series(now() - make_interval(days => %(days)s::integer), now(), interval '1 day') t
cross join lateral inbox_partition_for(t)
"""

# Three attempts per event: two failures a second apart, then the success.
FILL_ATTEMPTS = """
insert into inbox_attempts
    (event_id, received_at, attempt, started_at, finished_at, outcome, handler, worker,
     error_class, error_message, error_traceback)
select e.id, e.received_at, n,
       e.received_at + make_interval(secs => n),
       e.received_at + make_interval(secs => n + 0.02),
       case when n < 3 then 'failed' else 'processed' end,
       'handlers.paid', 'bench:1/0',
       case when n < 3 then 'KeyError' end,
       case when n < 3 then '''amount''' end,
       case when n < 3 then 'Traceback (most recent call last):\n  File "handlers.py", line 9'
                            || E'\nKeyError: ''amount''' end
from inbox_events e
cross join generate_series(1, 3) n
order by e.id, n
"""

FILL_DELIVERIES = """
insert into inbox_deliveries (event_id, received_at, body_sha256, body)
select e.id, e.received_at + interval '30 seconds',
       case when e.id %% 20 = 0 then sha256(e.body || 'x'::bytea) else e.body_sha256 end,
       case when e.id %% 20 = 0 then e.body || 'x'::bytea end
from inbox_events e
where e.id %% 10 = 0
"""

# The newest tenth of a percent of the events still pending, one in a thousand dead: the
# work table stays a small fraction of the log, as it is by design.
FILL_WORK = """
insert into inbox_work (event_id, received_at, state, attempts, last_error)
select e.id, e.received_at,
       case when e.id > %(events)s - %(pending)s then 'pending' else 'dead' end,
       3,
       case when e.id > %(events)s - %(pending)s then null else 'KeyError: ''amount''' end
from inbox_events e
where e.id > %(events)s - %(pending)s or e.id %% 1000 = 7
"""


def fill(url: str, *, events: int, sources: int = 100, days: float = 30.0) -> None:
    """An inbox of ``events`` events (3 attempts each) over ``days`` days, analysed."""
    params = {
        "events": events,
        "sources": sources,
        "spacing": days * 86400 / events,
        "days": int(days) + 1,
        "pending": max(1, events // 1000),
    }
    with psycopg.connect(url) as conn:
        conn.execute(PARTITIONS, params)
        for statement in (FILL_EVENTS, FILL_ATTEMPTS, FILL_DELIVERIES, FILL_WORK):
            conn.execute(statement, params)  # type: ignore[call-overload]
        conn.commit()
    # A replay run of a hundred dead letters, through the API (its audit row included).
    dead = list(range(7, events, 1000))[:100]
    if dead:
        queries.retry_dead(url, reason="benchmark", ids=dead, via="api")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("vacuum analyze")


# --- the calls --------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    name: str
    run: Callable[[psycopg.Connection[Any], random.Random], object]


def api_calls(events: int, sources: int) -> list[Call]:
    """The operator API behind each page, each call on a different event."""
    deep = max(1, events // 100)  # a page near the oldest event, reached by its cursor

    def first_page(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        return queries.events(conn, EventFilter(), limit=50)

    def deep_page(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        start = queries.EventPage([], rng.randint(deep, 2 * deep)).next_cursor
        return queries.events(conn, EventFilter(), limit=50, cursor=start)

    def source_page(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        source = f"source{rng.randrange(sources):03d}"
        return queries.events(conn, EventFilter(source=source, type="invoice.*"), limit=50)

    def search_key(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        return queries.search(conn, f"evt_{rng.randint(1, events)}")

    def search_source_key(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        g = rng.randint(1, events)
        return queries.search(conn, f"source{g % sources:03d}:evt_{g}")

    def detail(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        return queries.event(conn, rng.randint(1, events // 10) * 10)  # one with repeats

    def overview(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        return (
            queries.status(conn),
            queries.activity(conn, queries.LAST_HOUR),
            queries.activity(conn, queries.LAST_DAY),
        )

    def dead_page(conn: psycopg.Connection[Any], rng: random.Random) -> object:
        return queries.dead(conn, limit=50)

    return [
        Call("events list, first page", first_page),
        Call("events list, deep page (cursor)", deep_page),
        Call("events list, source + type glob", source_page),
        Call("search by key (any source)", search_key),
        Call("search by SOURCE:KEY", search_source_key),
        Call("event detail", detail),
        Call(f"overview ({sources} sources + 2 series)", overview),
        Call("dead letters, first page", dead_page),
    ]


def time_calls(url: str, calls: Sequence[Call], *, count: int, seed: int) -> dict[str, list[float]]:
    """Milliseconds per call, ``count`` of each, interleaved, on one open connection."""
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {c.name: [] for c in calls}
    with psycopg.connect(url, autocommit=True) as conn:
        for call in calls:  # warm the caches and the connection once
            call.run(conn, rng)
        for _ in range(count):
            for call in calls:
                started = time.perf_counter()
                call.run(conn, rng)
                timings[call.name].append((time.perf_counter() - started) * 1000)
    return timings


@dataclass
class Row:
    name: str
    p50: list[float]
    p99: list[float]

    def cells(self) -> list[str]:
        p50, p99 = median(self.p50), median(self.p99)
        verdict = "yes" if p99 <= GOAL_P99_MS else "**no**"
        return [self.name, f"{p50:.1f}", f"{p99:.1f}", verdict]


def summarise(runs: Sequence[dict[str, list[float]]]) -> list[Row]:
    names = list(runs[0])
    return [
        Row(
            name,
            [percentile(run[name], 50) for run in runs],
            [percentile(run[name], 99) for run in runs],
        )
        for name in names
    ]


def render(title: str, rows: Sequence[Row], calls: int, runs: int) -> list[str]:
    lines = [
        f"### {title}",
        "",
        f"{calls} calls of each per run, {runs} runs; milliseconds, median over runs of each"
        f" run's p50 and p99; goal p99 ≤ {GOAL_P99_MS:.0f} ms.",
        "",
        "| call | p50 ms | p99 ms | p99 ≤ goal |",
        "|---|---:|---:|---|",
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return [*lines, ""]


# --- the pages, through the console's ASGI app -------------------------------------------


def _pages(events: int, sources: int) -> list[tuple[str, Callable[[random.Random], str]]]:
    """The console's page behind each API call above: (name, a path for this call)."""
    deep = max(1, events // 100)

    def deep_page(rng: random.Random) -> str:
        cursor = queries.EventPage([], rng.randint(deep, 2 * deep)).next_cursor
        return f"/events?cursor={cursor}"

    def detail(rng: random.Random) -> str:
        return f"/events/{rng.randint(1, events // 10) * 10}"

    return [
        ("GET /events (first page)", lambda rng: "/events"),
        ("GET /events?cursor= (deep page)", deep_page),
        (
            "GET /events?source=&type=invoice.*",
            lambda rng: f"/events?source=source{rng.randrange(sources):03d}&type=invoice.*",
        ),
        (
            "GET /events?q=KEY (search by key; 303 to the one match)",
            lambda rng: f"/events?q=evt_{rng.randint(1, events)}",
        ),
        ("GET /events/{id} (detail)", detail),
        (f"GET / (overview, {sources} sources)", lambda rng: "/"),
        ("GET /dead", lambda rng: "/dead"),
    ]


def page_timings(
    url: str, *, events: int, sources: int, count: int, seed: int
) -> dict[str, list[float]] | None:
    """The console's pages timed in-process through its ASGI app, signed in as an operator
    (milliseconds per request); None when the console is not installed here."""
    try:
        import httpx

        from inbox._core.config.settings import Settings
        from inbox.console import create_app
    except ImportError:
        return None
    import asyncio
    import secrets

    token = secrets.token_urlsafe(16)
    app = create_app(
        Settings(), dsn=url, secret_key=secrets.token_urlsafe(32), dev_login_token=token
    )
    pages = _pages(events, sources)
    rng = random.Random(seed)
    timings: dict[str, list[float]] = {name: [] for name, _ in pages}

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
            signed_in = await client.get(f"/login/token/{token}")
            assert signed_in.status_code == 303, signed_in.text[:200]
            for _, path in pages:  # warm up: the pool opens, the templates compile
                await client.get(path(rng))
            for _ in range(count):
                for name, path in pages:
                    started = time.perf_counter()
                    response = await client.get(path(rng))
                    timings[name].append((time.perf_counter() - started) * 1000)
                    # a search that finds one event answers 303 to its detail page
                    assert response.status_code in (200, 303), (name, response.status_code)
        await app.state.console.pool.close()

    asyncio.run(run())
    return timings


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = command_parser("python -m benchmarks console", __doc__)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--sources", type=int, default=100)
    p.add_argument("--days", type=float, default=30.0, help="the span the events arrive over")
    p.add_argument("--calls", type=int, default=200, help="timed calls of each per run")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pages", action="store_true", help="also time the console's pages")
    p.add_argument("--out", type=Path, default=OUT_DIR / "console.md")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    report = Report("benchmarks.console", "# pg-inbox operator console: server time per page", argv)
    args = parse_args(report.argv)
    with report.server() as (server, _logs), new_database(server) as url:
        _migrate.upgrade(url)
        started = time.perf_counter()
        fill(url, events=args.events, sources=args.sources, days=args.days)
        filled = time.perf_counter() - started
        with psycopg.connect(url) as conn:
            sizes = conn.execute(
                "select (select count(*) from inbox_events), (select count(*) from"
                " inbox_attempts), (select count(*) from inbox_deliveries),"
                " pg_size_pretty(pg_database_size(current_database()))"
            ).fetchone()
        assert sizes is not None
        print(f"filled in {filled:.0f} s: {sizes}", flush=True)
        calls = api_calls(args.events, args.sources)
        api_runs = [time_calls(url, calls, count=args.calls, seed=run) for run in range(args.runs)]
        page_runs = []
        if args.pages:
            for run in range(args.runs):
                timed = page_timings(
                    url, events=args.events, sources=args.sources, count=args.calls, seed=run
                )
                if timed is None:
                    print("the console is not installed here: pages not timed", flush=True)
                    break
                page_runs.append(timed)
    data = (
        f"- data: {sizes[0]:,} events over {args.days:g} days in {args.sources} sources,"
        f" {sizes[1]:,} attempts, {sizes[2]:,} repeat deliveries; database {sizes[3]};"
        f" filled in {filled:.0f} s"
    )
    body = render(
        "The operator API (`inbox.queries`), one open connection",
        summarise(api_runs),
        args.calls,
        args.runs,
    )
    if page_runs:
        body += render(
            "The console's pages through its ASGI app (httpx ASGITransport, in-process)",
            summarise(page_runs),
            args.calls,
            len(page_runs),
        )
    report.finish(args.out, [body], data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
