"""Example handlers: what `inbox dev` runs, and a template for your own.

Each handler writes through ``conn``, the claim transaction's connection: the business row
commits exactly when the event is marked handled, so a retry, a duplicate delivery or a
crashed worker can never record a payment twice.
"""

from __future__ import annotations

from typing import Any

import psycopg

from processors import Event, Router

router = Router()


@router.on("stripe", "payment_intent.succeeded")
@router.on("stripe", "invoice.paid")
async def record_payment(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    payment = event.json()["data"]["object"]
    await conn.execute(
        "insert into payments (event_id, provider_id, amount, currency) values (%s, %s, %s, %s)",
        [event.id, event.key, payment["amount"], payment["currency"]],
    )


@router.on("github", "*")
def record_github_delivery(event: Event, conn: psycopg.Connection[Any]) -> None:
    # A sync handler: it runs in a worker thread with a sync connection, in the same
    # transaction as the claim.
    conn.execute(
        "insert into github_deliveries (event_id, kind) values (%s, %s)",
        [event.id, event.type or "unknown"],
    )


@router.on("demo", "*")
async def log_demo(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    return None  # accepted and settled: the attempt history records it
