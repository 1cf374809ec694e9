"""The handler the pooled worker tests run in ``inbox worker``: it records each event with
the statement timeout its claim transaction runs under, so a test sees that the worker's
setting was in force inside its transaction (and then, that it was gone after)."""

from __future__ import annotations

from typing import Any

import psycopg

from processors import Event, Router

router = Router()


@router.on("shop", "order.paid")
async def record_payment(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.execute(
        "insert into payments (event_id, amount, note)"
        " values (%s, %s, current_setting('statement_timeout'))",
        [event.id, event.json()["n"]],
    )
