"""The handlers the processing benchmarks run under ``inbox worker --app benchmarks._apps:NAME``.

- ``noop``: returns at once (the queue's own cost per event);
- ``business``: one business INSERT through the claim transaction's connection, so it commits
  atomically with the settle (the idempotent-consumer pattern the product exists for);
- ``business_batch``: the same rows from a batch handler (``Router.on_batch``): one INSERT
  from ``unnest`` of the claimed batch's event ids, in the same transaction (an
  ``executemany`` of the rows cost ~30 us of worker CPU a row in psycopg against ~7 for
  one statement, 64 rows a batch, measured);
- ``latency``: appends ``key <time.time()>`` to the file named by ``INBOX_BENCH_RECORD`` when
  the handler starts, one write(2) per event (for the wake-latency figure).
"""

from __future__ import annotations

import os
import time
from typing import Any

from processors import Event, Router

BUSINESS_TABLE_DDL = """
create table bench_business (
    id          bigint generated always as identity primary key,
    event_id    bigint not null unique,
    amount      integer not null,
    created_at  timestamptz not null default now()
)
"""

noop = Router()
business = Router()
business_batch = Router()
latency = Router()


@noop.on("*")
async def nothing(event: Event, conn: Any) -> None:
    return None


@business.on("*")
async def record_payment(event: Event, conn: Any) -> None:
    await conn.execute(
        "insert into bench_business (event_id, amount) values (%s, %s)", [event.id, 4200]
    )


@business_batch.on_batch("*")
async def record_payments(events: list[Event], conn: Any) -> None:
    await conn.execute(
        "insert into bench_business (event_id, amount)"
        " select event_id, 4200 from unnest(%s::bigint[]) as event_id",
        [[event.id for event in events]],
    )


_record_fd: int | None = None


@latency.on("*")
async def stamp(event: Event, conn: Any) -> None:
    global _record_fd  # opened once, on the first event
    if _record_fd is None:
        path = os.environ["INBOX_BENCH_RECORD"]
        _record_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(_record_fd, f"{event.key} {time.time():.6f}\n".encode())
