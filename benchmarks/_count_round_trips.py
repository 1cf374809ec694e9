"""Count the worker's statements (round trips) per event: ``processors.Worker`` in this
process, with psycopg's execute/commit/rollback wrapped to count by statement kind.

    PYTHONPATH=. python benchmarks/_count_round_trips.py URL [noop|business]

URL names a migrated database with a loaded backlog (see benchmarks.processing); the worker
runs until the work table is empty, then the counts per event are printed. A profiling aid
for the report, not a benchmark.
"""

from __future__ import annotations

import collections
import sys
import time

import anyio
import psycopg

from benchmarks import _apps
from inbox._cli.logs import configure_logging
from inbox._core.config.settings import WorkerSettings
from processors import Worker

COUNTS: collections.Counter[str] = collections.Counter()


def _kind(query: object) -> str:
    text = query.as_string() if hasattr(query, "as_string") else str(query)  # type: ignore[attr-defined]
    words = text.split("--")[0].split()
    first = " ".join(words[:2]).lower() if words else "?"
    if "inbox_claims c" in text and "limit 1" in text:
        return "claim_suspect"
    if "for update skip locked" in text and "limit %(batch_size)s" in text:
        return "claim_batch"
    if "insert into inbox_claims" in text:
        return "count_claims"
    if "insert into inbox_attempts" in text:
        return "settle"
    if "bench_business" in text:
        return "handler: business insert"
    return first


def _wrap() -> None:
    orig_execute = psycopg.AsyncCursor.execute
    orig_commit = psycopg.AsyncConnection.commit
    orig_rollback = psycopg.AsyncConnection.rollback

    async def execute(self, query, params=None, **kw):  # type: ignore[no-untyped-def]
        # psycopg sends BEGIN itself before the first statement of a transaction.
        conn = self._conn
        if not conn.autocommit and conn.pgconn.transaction_status == 0:  # IDLE
            COUNTS["begin (implicit)"] += 1
        COUNTS[_kind(query)] += 1
        return await orig_execute(self, query, params, **kw)

    async def commit(self):  # type: ignore[no-untyped-def]
        COUNTS["commit"] += 1
        return await orig_commit(self)

    async def rollback(self):  # type: ignore[no-untyped-def]
        COUNTS["rollback"] += 1
        return await orig_rollback(self)

    psycopg.AsyncCursor.execute = execute  # type: ignore[method-assign]
    psycopg.AsyncConnection.commit = commit  # type: ignore[method-assign]
    psycopg.AsyncConnection.rollback = rollback  # type: ignore[method-assign]


async def main(url: str, app: str) -> None:
    with psycopg.connect(url) as conn:
        row = conn.execute("select count(*) from inbox_work").fetchone()
    events = int(row[0]) if row else 0
    configure_logging(console=False)  # as the CLI does: INFO and up, JSON on stderr
    _wrap()
    router = getattr(_apps, app)
    worker = Worker(url, router, WorkerSettings(), concurrency=1)
    stop = anyio.Event()

    async def watch() -> None:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            while True:
                cur = await conn.execute("select count(*) from inbox_work")
                r = await cur.fetchone()
                if r and r[0] == 0:
                    stop.set()
                    return
                await anyio.sleep(0.05)

    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        await worker.run(stop)
    wall = time.monotonic() - t0
    COUNTS.pop("select count(*)", None)
    total = sum(COUNTS.values())
    print(f"{events} events in {wall:.1f} s; statements (round trips) by kind, per event:")
    for kind, n in COUNTS.most_common():
        print(f"  {kind:<32} {n:>8}  {n / events:.3f}")
    print(f"  {'total':<32} {total:>8}  {total / events:.3f}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "noop")
