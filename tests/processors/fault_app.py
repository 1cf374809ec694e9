"""The handlers the fault tests run in real worker processes.

Behaviour is chosen by environment variables, so one module serves every scenario:
- ``FAULT_HANDLER_SLEEP_MS``: time each handler spends inside the claim transaction (a
  ``pg_sleep`` on the claim connection), so kills land mid-handler.
- ``FAULT_POISON_KEY``: the handler of the event with this key SIGKILLs its own process.
- ``FAULT_FAIL_FIRST_EVERY``: every event whose n is a multiple of this fails its first
  attempt after its business write, so failures (and the batch re-runs they cause) happen
  beside the kills.
- ``FAULT_TRACING``: set up the OpenTelemetry SDK in the worker, so every handler runs in
  its span (processors._running.tracing) while it is killed.
- ``FAULT_READ_BACK``: the async handler reads its write back (a fetch: the batch's
  pipeline syncs mid-batch), so kills also land between a pipeline's syncs.

``order.batched`` and ``order.batched_refund`` events go to batch handlers (async and sync),
which write every event of their list in one ``executemany`` and fail when any event of the
list is due to fail, so a failure undoes the whole call and the events run again one by one.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import psycopg
from opentelemetry import trace

from processors import Event, Router

router = Router()

SLEEP_SECONDS = int(os.environ.get("FAULT_HANDLER_SLEEP_MS", "0")) / 1000
POISON_KEY = os.environ.get("FAULT_POISON_KEY")
FAIL_FIRST_EVERY = int(os.environ.get("FAULT_FAIL_FIRST_EVERY", "0"))
READ_BACK = bool(os.environ.get("FAULT_READ_BACK"))

TRACING = bool(os.environ.get("FAULT_TRACING"))

if TRACING:
    from opentelemetry.sdk.trace import TracerProvider

    # Spans are made (the SDK's whole path runs) and kept nowhere.
    trace.set_tracer_provider(TracerProvider())


class FirstAttemptFailed(Exception):
    pass


def _in_its_span() -> None:
    """With FAULT_TRACING, a handler outside its span is a bug: its failure shows in the
    test's account of failures."""
    if TRACING and not trace.get_current_span().get_span_context().is_valid:
        raise RuntimeError("the handler runs outside its span")


def _maybe_fail(event: Event, n: int) -> None:
    _in_its_span()
    if FAIL_FIRST_EVERY and n % FAIL_FIRST_EVERY == 0 and event.attempt == 1:
        raise FirstAttemptFailed(f"event {event.id} fails its first attempt")


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
    if READ_BACK:
        cursor = await conn.execute("select count(*) from payments where event_id = %s", [event.id])
        if await cursor.fetchone() != (1,):
            raise AssertionError(f"event {event.id}: its write is not there once")
    _maybe_fail(event, event.json()["n"])


@router.on("shop", "order.refunded")
def record_refund(event: Event, conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "insert into payments (event_id, amount, note) values (%s, %s, 'refund')",
        [event.id, -event.json()["n"]],
    )
    if SLEEP_SECONDS:
        conn.execute("select pg_sleep(%s)", [SLEEP_SECONDS])
    _maybe_fail(event, event.json()["n"])


@router.on_batch("shop", "order.batched")
async def record_payments(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
    if any(event.key == POISON_KEY for event in events):
        os.kill(os.getpid(), signal.SIGKILL)
    async with conn.cursor() as cursor:
        await cursor.executemany(
            "insert into payments (event_id, amount, note) values (%s, %s, %s)",
            [(event.id, event.json()["n"], f"pid {os.getpid()}") for event in events],
        )
        if SLEEP_SECONDS:
            await cursor.execute("select pg_sleep(%s)", [SLEEP_SECONDS])
    for event in events:
        _maybe_fail(event, event.json()["n"])


@router.on_batch("shop", "order.batched_refund")
def record_refunds(events: list[Event], conn: psycopg.Connection[Any]) -> None:
    with conn.cursor() as cursor:
        cursor.executemany(
            "insert into payments (event_id, amount, note) values (%s, %s, 'refund')",
            [(event.id, -event.json()["n"]) for event in events],
        )
        if SLEEP_SECONDS:
            cursor.execute("select pg_sleep(%s)", [SLEEP_SECONDS])
    for event in events:
        _maybe_fail(event, event.json()["n"])


@router.on("ordered")
async def record_in_order(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    """Records each event of a key with the last position of that key it saw committed: if
    the key ran one event at a time in order, that is always its own position minus one."""
    body = event.json()
    key, seq = body["data"]["object"]["id"], body["seq"]
    cursor = await conn.execute(
        "select max(seq) from ordered_effects where ordering_key = %s", [key]
    )
    row = await cursor.fetchone()
    await conn.execute(
        "insert into ordered_effects (event_id, ordering_key, seq, prev_seen, pid)"
        " values (%s, %s, %s, %s, %s)",
        [event.id, key, seq, None if row is None else row[0], os.getpid()],
    )
    if SLEEP_SECONDS:
        await conn.execute("select pg_sleep(%s)", [SLEEP_SECONDS])
