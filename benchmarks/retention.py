"""Retention at scale: the partitioned log's prune beside the old DELETE, ingest and lookups
on a large log, the key table's bytes, and what the upgrade to the partitioned log locks.

    python -m benchmarks retention                       # 100,000 and 1,000,000; a 10,000,000 log
    python -m benchmarks retention --sizes 10000 --log-events 200000 --runs 1   # a smoke run

Sections (each its own databases, on one server):

- **prune**: ``--sizes`` settled events (one attempt each, a repeat delivery for every
  tenth) received over 30 days, 91 to 120 days ago, in daily partitions, plus 1,000 recent
  events; then ``inbox prune --older-than 90d`` (``inbox_prune``), timed. Beside it, the
  same data in the schema before partitions (revision 0011), pruned by that revision's
  ``inbox_prune``: one DELETE of the events with their deliveries and attempts. Sizes are
  the log's tables with their indexes and TOAST, after each prune (the DELETE's dead rows
  stay until vacuum, and its table keeps its pages after).
- **log**: a log of ``--log-events`` events over 60 days in daily partitions (filled in
  SQL: keys, then events), beside an empty one. Ingest: ``AsyncInboxWriter``, 16 writers,
  new keys, ``--duration`` seconds, runs interleaved. Duplicates: 2,000 single writes of
  existing keys, each timed. Search: the console's search by key alone and by
  ``SOURCE:KEY`` (``queries.search``), 200 calls each, timed. The key table's bytes (table,
  indexes) per key.
- **upgrade**: a log at revision 0011 with ``--upgrade-events`` events and an attempt each,
  upgraded to 0012 then 0013 (``inbox db upgrade``), timed; meanwhile a writer appends one
  event at a time (the code of the revision it writes to) and its longest wait is the time
  writes were held.

The database is ``INBOX_BENCH_DATABASE_URL`` (a maintenance database; the benchmark creates
and drops its own), else an embedded PostgreSQL in a temporary folder.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

from benchmarks._common import OUT_DIR, median, percentile
from benchmarks._report_frame import Report, command_parser
from inbox import AsyncInboxWriter, InboxWriter, queries
from inbox._core.database import migrate as _migrate
from inbox.testing import new_database

GOAL_PRUNE_SECONDS = 1.0
GOAL_SEARCH_P99_MS = 100.0

# The data of the prune section, for either schema: events 91 to 120 days old, then the
# recent ones.
FILL_KEYED = """
with keyed as (
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    select 'shop', 'evt_' || g,
           case when g <= %(n)s
                then now() - interval '91 days'
                     - make_interval(secs => (g - 1) * 29 * 86400.0 / %(n)s)
                else now() - make_interval(secs => g - %(n)s) end,
           sha256(convert_to('{"id": "evt_' || g || '"}', 'UTF8'))
    from generate_series(1, %(n)s + %(recent)s) g
    order by g
    returning event_id, received_at, idempotency_key
)
insert into inbox_events (id, received_at, source, idempotency_key, event_type, body, body_sha256)
select event_id, received_at, 'shop', idempotency_key, 'invoice.paid',
       convert_to('{"id": "' || idempotency_key || '"}', 'UTF8'),
       sha256(convert_to('{"id": "' || idempotency_key || '"}', 'UTF8'))
from keyed
"""

FILL_PLAIN = """
insert into inbox_events (source, idempotency_key, event_type, received_at, body, body_sha256)
select 'shop', 'evt_' || g, 'invoice.paid',
       case when g <= %(n)s
            then now() - interval '91 days' - make_interval(secs => (g - 1) * 29 * 86400.0 / %(n)s)
            else now() - make_interval(secs => g - %(n)s) end,
       convert_to('{"id": "evt_' || g || '"}', 'UTF8'),
       sha256(convert_to('{"id": "evt_' || g || '"}', 'UTF8'))
from generate_series(1, %(n)s + %(recent)s) g
order by g
"""

# One attempt an event; a repeat delivery for every tenth (received a minute after it).
FILL_HISTORY = """
insert into inbox_attempts (event_id, {received} attempt, started_at, finished_at, outcome)
select id, {receipt} 1, received_at, received_at + interval '2 ms', 'processed'
from inbox_events;
insert into inbox_deliveries (event_id, received_at, body_sha256)
select id, received_at + interval '1 minute', body_sha256 from inbox_events where id % 10 = 0
"""

LOG_SIZE = """
select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
from pg_class c
where c.relkind = 'r'
  and (c.relname in ('inbox_events', 'inbox_attempts', 'inbox_deliveries')
       or c.relname like 'inbox_events_%' or c.relname like 'inbox_attempts_%'
       or c.relname like 'inbox_deliveries_%')
"""


def _fill_prune_data(url: str, n: int, *, partitioned: bool) -> None:
    params = {"n": n, "recent": 1000}
    with psycopg.connect(url) as conn:
        if partitioned:
            conn.execute("update inbox_retention set partition = 'day'")
            conn.execute(
                "select count(*) from generate_series(now() - interval '121 days', now(),"
                " interval '1 day') t cross join lateral inbox_partition_for(t)"
            )
            conn.execute(FILL_KEYED, params)
            history = FILL_HISTORY.format(received="received_at,", receipt="received_at,")
        else:
            conn.execute(FILL_PLAIN, params)
            history = FILL_HISTORY.format(received="", receipt="")
        for statement in history.split(";"):
            conn.execute(statement)  # type: ignore[call-overload]
        conn.commit()
        conn.autocommit = True
        conn.execute("vacuum analyze")


def _prune_once(server: str, n: int, *, partitioned: bool) -> tuple[float, float, int, int]:
    """(the prune's wall time, the drop of what it detached after it, the log's size before,
    after)."""
    with new_database(server) as url:
        _migrate.upgrade(url, "head" if partitioned else "0011")
        _fill_prune_data(url, n, partitioned=partitioned)
        with psycopg.connect(url) as conn:
            before = int(conn.execute(LOG_SIZE).fetchone()[0])  # type: ignore[index]
            conn.commit()
            started = time.perf_counter()
            conn.execute("select * from inbox_prune(90 * 86400, 'bench', 'api')")
            conn.commit()
            took = time.perf_counter() - started
            # What `inbox prune` does next, in a transaction of its own that holds no lock of
            # the log's: the files of the detached partitions go.
            started = time.perf_counter()
            if partitioned:
                conn.execute("select inbox_drop_pruned()")
                conn.commit()
            dropped = time.perf_counter() - started
            after = int(conn.execute(LOG_SIZE).fetchone()[0])  # type: ignore[index]
    print(f"prune of {n:,}: {'partitions' if partitioned else 'DELETE'} {took:.2f} s", flush=True)
    return took, dropped, before, after


def prune_section(server: str, sizes: Sequence[int], runs: int) -> list[str]:
    rows = []
    for n in sizes:
        parts = [_prune_once(server, n, partitioned=True) for _ in range(runs)]
        deletes = [_prune_once(server, n, partitioned=False) for _ in range(runs)]
        part = median([p[0] for p in parts])
        drop = median([p[1] for p in parts])
        delete = median([d[0] for d in deletes])
        rows.append(
            f"| {n:,} | {part * 1000:,.0f} ms | {drop * 1000:,.0f} ms"
            f" | {delete * 1000:,.0f} ms | {delete / part:,.0f}x"
            f" | {_mb(parts[0][2])} -> {_mb(parts[0][3])}"
            f" | {_mb(deletes[0][2])} -> {_mb(deletes[0][3])} |"
        )
    return [
        "## Prune: whole partitions against the old DELETE",
        "",
        f"Medians of {runs} runs, each on a fresh database.",
        "",
        "| settled events | prune (the log's locks held) | then the files dropped"
        " | DELETE (0011) | DELETE ÷ prune | log size, partitions | log size, DELETE |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        f"Goal: each prune under {GOAL_PRUNE_SECONDS:g} s, and the largest within 2x of the"
        " smallest. The prune detaches whole partitions (the same work whatever their rows);"
        " the drop that frees their files runs after it, in its own transaction, holding only"
        " the detached tables.",
    ]


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


FILL_LOG = """
with keyed as (
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    select 'source' || lpad((g %% 100)::text, 3, '0'), 'evt_' || g,
           now() - make_interval(secs => (%(n)s - g) * 60 * 86400.0 / %(n)s),
           sha256(convert_to('{"id": "evt_' || g || '"}', 'UTF8'))
    from generate_series(%(start)s, %(end)s) g
    returning event_id, received_at, source, idempotency_key, body_sha256
)
insert into inbox_events (id, received_at, source, idempotency_key, event_type, body, body_sha256)
select event_id, received_at, source, idempotency_key, 'invoice.paid',
       convert_to('{"id": "' || idempotency_key || '"}', 'UTF8'), body_sha256
from keyed
"""


def _fill_log(url: str, n: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("update inbox_retention set partition = 'day'")
        conn.execute(
            "select count(*) from generate_series(now() - interval '61 days', now(),"
            " interval '1 day') t cross join lateral inbox_partition_for(t)"
        )
        step = 500_000
        for start in range(1, n + 1, step):
            conn.execute(FILL_LOG, {"n": n, "start": start, "end": min(n, start + step - 1)})
        conn.execute("vacuum analyze")


def _ingest(url: str, seconds: float, writers: int = 16) -> float:
    async def run() -> float:
        tag = f"i{random.getrandbits(40):010x}"
        done = 0
        stop = time.monotonic() + seconds

        async with AsyncInboxWriter(url, min_size=writers, max_size=writers) as writer:

            async def one(w: int) -> None:
                nonlocal done
                n = 0
                while time.monotonic() < stop:
                    await writer.write("ingest", f"{tag}-{w}-{n}", b'{"id": 1}')
                    n += 1
                    done += 1

            started = time.monotonic()
            await asyncio.gather(*(one(w) for w in range(writers)))
            return done / (time.monotonic() - started)

    return asyncio.run(run())


def _duplicates(url: str, total: int, count: int = 2000) -> list[float]:
    rng = random.Random(7)
    timings = []
    with InboxWriter(url, min_size=1, max_size=1) as writer:
        for _ in range(count):
            g = rng.randint(1, total)
            source = f"source{g % 100:03d}"
            started = time.perf_counter()
            result = writer.write(source, f"evt_{g}", b"{}")
            timings.append((time.perf_counter() - started) * 1000)
            assert not result.is_new
    return timings


def _searches(url: str, total: int, count: int = 200) -> dict[str, list[float]]:
    rng = random.Random(11)
    timings: dict[str, list[float]] = {"key alone": [], "SOURCE:KEY": []}
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(count):
            g = rng.randint(1, total)
            for name, text in (
                ("key alone", f"evt_{g}"),
                ("SOURCE:KEY", f"source{g % 100:03d}:evt_{g}"),
            ):
                started = time.perf_counter()
                found = queries.search(conn, text)
                timings[name].append((time.perf_counter() - started) * 1000)
                assert found, text
    return timings


def log_section(server: str, n: int, runs: int, seconds: float) -> list[str]:
    with new_database(server) as big, new_database(server) as empty:
        for url in (big, empty):
            _migrate.upgrade(url)
        started = time.perf_counter()
        _fill_log(big, n)
        print(f"filled {n:,} events in {time.perf_counter() - started:.0f} s", flush=True)
        with psycopg.connect(big) as conn:
            partitions, key_bytes, keys = conn.execute(
                "select (select count(*) from inbox_partitions),"
                " pg_total_relation_size('inbox_keys'), (select count(*) from inbox_keys)"
            ).fetchone() or (0, 0, 1)
        rates: dict[str, list[float]] = {"empty": [], "big": []}
        for _ in range(runs):
            for name, url in (("empty", empty), ("big", big)):
                rates[name].append(_ingest(url, seconds))
                print(f"ingest into the {name} log: {rates[name][-1]:,.0f}/s", flush=True)
        duplicates = _duplicates(big, n)
        searches = _searches(big, n)
    ratio = median(rates["big"]) / median(rates["empty"])
    lines = [
        f"## A log of {n:,} events in {partitions} partitions",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| ingest into an empty log, 16 writers (median of {runs}) |"
        f" {median(rates['empty']):,.0f} events/s |",
        f"| ingest into the {n:,}-event log | {median(rates['big']):,.0f} events/s |",
        f"| ratio (goal ≥ 0.9) | {ratio:.2f}x |",
        f"| duplicate write, p50 / p99 | {percentile(duplicates, 50):.2f} /"
        f" {percentile(duplicates, 99):.2f} ms |",
    ]
    for name, values in searches.items():
        lines.append(
            f"| console search by {name}, p50 / p99 (goal ≤ {GOAL_SEARCH_P99_MS:g} ms) |"
            f" {percentile(values, 50):.2f} / {percentile(values, 99):.2f} ms |"
        )
    lines.append(f"| key table (table, indexes) per key | {key_bytes / keys:.0f} bytes |")
    return lines


class _StallProbe:
    """Appends one event at a time while a migration runs; the longest wait is the time the
    migration held the log's writes. Writes that fail (the old code against the new schema)
    count apart."""

    def __init__(self, url: str, *, keyed: bool) -> None:
        self._url = url
        self._keyed = keyed
        self.longest = 0.0
        self.failed = 0
        self.errors: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        with psycopg.connect(self._url, autocommit=True) as conn:
            while not self._stop.is_set():
                n += 1
                started = time.perf_counter()
                try:
                    if self._keyed:
                        conn.execute(
                            "with k as (insert into inbox_keys (source, idempotency_key,"
                            " body_sha256) values ('probe', %s, sha256('')) returning event_id,"
                            " received_at) insert into inbox_events (id, received_at, source,"
                            " idempotency_key, body, body_sha256) select event_id, received_at,"
                            " 'probe', %s, '', sha256('') from k",
                            [f"k{n}", f"k{n}"],
                        )
                    else:
                        conn.execute(
                            "insert into inbox_events (source, idempotency_key, body, body_sha256)"
                            " values ('probe', %s, '', sha256('')) on conflict do nothing",
                            [f"p{n}"],
                        )
                except psycopg.Error as exc:
                    self.failed += 1
                    self.errors.add(f"{type(exc).__name__}: {exc}".splitlines()[0])
                self.longest = max(self.longest, time.perf_counter() - started)

    def __enter__(self) -> _StallProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def upgrade_section(server: str, n: int) -> list[str]:
    with new_database(server) as url:
        _migrate.upgrade(url, "0011")
        with psycopg.connect(url) as conn:
            conn.execute(FILL_PLAIN, {"n": n, "recent": 0})
            conn.execute(FILL_HISTORY.format(received="", receipt="").split(";")[0])
            conn.commit()
            conn.autocommit = True
            conn.execute("vacuum analyze")
        steps = []
        for revision, keyed in (("0012", False), ("0013", True)):
            with _StallProbe(url, keyed=keyed) as probe:
                started = time.perf_counter()
                _migrate.upgrade(url, revision)
                took = time.perf_counter() - started
            steps.append((revision, took, probe.longest, probe.failed))
            print(f"probe errors during {revision}: {sorted(probe.errors)}", flush=True)
            print(f"upgrade to {revision}: {took:.1f} s, writes held {probe.longest:.2f} s")
    rows = [
        f"| {rev} | {took:.1f} s | {held:.2f} s | {failed} |" for rev, took, held, failed in steps
    ]
    return [
        f"## Upgrading a log of {n:,} events (and as many attempts) to the partitioned log",
        "",
        "| revision | took | longest write held | probe writes refused |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        "The probe writes as the code of each revision does: during 0012, the old statement"
        " (ON CONFLICT on the log's own key), which is refused from the moment 0012 commits;"
        " during 0013, the key table's statement.",
    ]


def parse_args(argv: Sequence[str]) -> Any:
    p = command_parser("python -m benchmarks retention", __doc__)
    p.add_argument("--sizes", default="100000,1000000", help="settled events to prune")
    p.add_argument("--log-events", type=int, default=10_000_000, help="the large log's size")
    p.add_argument("--upgrade-events", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=3, help="runs of each prune and ingest (the median)")
    p.add_argument("--duration", type=float, default=4.0, help="seconds an ingest run")
    p.add_argument("--skip", default="", help="comma-separated: prune, log, upgrade")
    p.add_argument("--out", type=Path, default=OUT_DIR / "retention.md")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    report = Report("benchmarks.retention", "# pg-inbox: retention at scale", argv)
    args = parse_args(report.argv)
    skip = set(filter(None, args.skip.split(",")))
    sections = []
    with report.server() as (server, _logs):
        if "prune" not in skip:
            sizes = [int(s) for s in args.sizes.split(",")]
            sections.append(prune_section(server, sizes, args.runs))
        if "log" not in skip:
            sections.append(log_section(server, args.log_events, args.runs, args.duration))
        if "upgrade" not in skip:
            sections.append(upgrade_section(server, args.upgrade_events))
    report.finish(args.out, sections)
    return 0
