"""The handlers the fault tests run in real worker processes.

Behaviour is chosen by environment variables, so one module serves every scenario:
- ``FAULT_HANDLER_SLEEP_MS``: time each handler spends inside the claim transaction (a
  ``pg_sleep`` on the claim connection), so kills land mid-handler.
- ``FAULT_POISON_KEY``: the handler of the event with this key SIGKILLs its own process.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import psycopg

from processors import Event, Router

router = Router()

SLEEP_SECONDS = int(os.environ.get("FAULT_HANDLER_SLEEP_MS", "0")) / 1000
POISON_KEY = os.environ.get("FAULT_POISON_KEY")


@router.on("shop", "order.paid")
async def record_payment(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    if event.key == POISON_KEY:
        os.kill(os.getpid(), signal.SIGKILL)
    await conn.execute(
        "insert into payments (event_id, amount, note) values (%s, %s, %s)",
        [event.id, event.json()["n"], f"pid {os.getpid()}"],
    )
    if SLEEP_SECONDS:
        await conn.execute("select pg_sleep(%s)", [SLEEP_SECONDS])


@router.on("shop", "order.refunded")
def record_refund(event: Event, conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "insert into payments (event_id, amount, note) values (%s, %s, 'refund')",
        [event.id, -event.json()["n"]],
    )
    if SLEEP_SECONDS:
        conn.execute("select pg_sleep(%s)", [SLEEP_SECONDS])
