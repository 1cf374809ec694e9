"""Handlers served by the worker processes of the operator tests (``--app``).

``buggy`` fails every event with an odd ``n``; ``fixed`` is the same handler after the bug
fix. Both record what they did in ``effects``, which commits only with a settled event.
"""

from __future__ import annotations

from typing import Any

import psycopg

from processors import Event, Router

CREATE_EFFECTS = """
create table effects (
    event_id   bigint not null,
    n          integer not null,
    is_replay  boolean not null,
    replay_id  bigint,
    handler    text not null
)
"""


async def _record(event: Event, conn: psycopg.AsyncConnection[Any], handler: str) -> None:
    await conn.execute(
        "insert into effects (event_id, n, is_replay, replay_id, handler)"
        " values (%s, %s, %s, %s, %s)",
        [event.id, event.json()["n"], event.is_replay, event.replay_id, handler],
    )


buggy = Router()


@buggy.on("shop", "order.*")
async def buggy_paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    await _record(event, conn, "buggy")  # rolled back with the failure below
    if event.json()["n"] % 2:
        raise ValueError(f"cannot parse amount of order {event.json()['n']}")


fixed = Router()


@fixed.on("shop", "order.*")
async def fixed_paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    await _record(event, conn, "fixed")
