"""The handlers the console's rehearsal tests run on a worker: the seed's shop events,
marked safe to rehearse (the seed's own router is not, so a rehearsal would skip it)."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import psycopg

from processors import Event, Router

__all__ = ["WORKER", "gate", "router"]

WORKER = "test-host:1"

router = Router()
# A handler waits on "open" while the test looks at a running rehearsal's page, or hangs
# while "hang" is there.
gate: dict[str, threading.Event] = {}


@router.on("shop", "order.paid", rehearse=True)
async def paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.execute("insert into shop_orders (key) values (%s)", [event.key])


@router.on("shop", "order.broken", rehearse=True)
async def broken(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    if "open" in gate:
        await anyio.to_thread.run_sync(gate["open"].wait)
    if "hang" in gate:
        await anyio.sleep(60)  # until the rehearsal's time limit cancels it
    raise RuntimeError(f"cannot parse order {event.key}")
