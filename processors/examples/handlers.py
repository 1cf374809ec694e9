"""Example handlers: what ``inbox dev`` runs when you have none of your own, and a template.

Each handler writes through ``conn``, the claim transaction's connection: the business row
commits exactly when the event is marked handled, so a retry, a duplicate delivery or a
crashed worker can never record a payment twice.

A replay (``inbox replay``) runs a handler again for an event it already handled, on
purpose: after a bug fix, to recompute. So every write here is an upsert keyed on the event:
running a handler twice for one event leaves the same rows as running it once.
"""

from __future__ import annotations

from typing import Any

import psycopg

from processors import Event, Router

__all__ = ["router"]

router = Router()


@router.on("stripe", "payment_intent.succeeded")
@router.on("stripe", "invoice.paid")
async def record_payment(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    payment = event.json()["data"]["object"]
    amount = payment.get("amount_paid", payment.get("amount"))
    # A replay recomputes: it overwrites the row with what the (fixed) handler derives now.
    await conn.execute(
        "insert into payments (event_id, provider_id, amount, currency)"
        " values (%s, %s, %s, %s)"
        " on conflict (event_id) do update set"
        " amount = excluded.amount, currency = excluded.currency, recorded_at = now()",
        [event.id, event.key, amount, payment["currency"]],
    )


@router.on("github", "*")
def record_github_delivery(event: Event, conn: psycopg.Connection[Any]) -> None:
    # A sync handler: it runs in a worker thread with a sync connection, in the same
    # transaction as the claim. Nothing to recompute on a replay: the first row stays.
    conn.execute(
        "insert into github_deliveries (event_id, kind) values (%s, %s)"
        " on conflict (event_id) do nothing",
        [event.id, event.type or "unknown"],
    )


@router.on("demo", "*")
async def log_demo(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    return None  # accepted and settled: the attempt history records it
