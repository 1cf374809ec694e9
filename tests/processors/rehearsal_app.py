"""Handlers the rehearsal tests run (``--app tests.processors.rehearsal_app:router``).

``shop/order.paid`` writes to three tables and fails on an odd ``n``; the others ask for a
retry, try to commit, hang, or call out without being marked safe to rehearse.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from processors import Event, Retry, Router

TABLES = """
create table effects (event_id bigint not null, n integer not null, rehearsal boolean);
create table payments (event_id bigint not null, amount integer not null);
create table ledger (id integer primary key, total integer not null);
insert into ledger values (1, 0), (2, 0);
"""

router = Router()
called_out: list[int] = []


@router.on("shop", "order.paid", rehearse=True)
async def paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    n = event.json()["n"]
    await conn.execute("insert into effects values (%s, %s, %s)", [event.id, n, event.is_rehearsal])
    await conn.execute("insert into payments values (%s, %s), (%s, %s)", [event.id, n] * 2)
    await conn.execute("update ledger set total = total + %s where id = 1", [n])
    if n % 2:
        raise ValueError(f"odd amount {n}")
    await conn.execute("delete from ledger where id = 2")


@router.on("shop", "order.later", rehearse=True)
async def later(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    raise Retry(after=60, reason="the shop is closed")


@router.on("shop", "order.commit", rehearse=True)
def commits(event: Event, conn: psycopg.Connection[Any]) -> None:
    conn.execute("insert into effects values (%s, 0, true)", [event.id])
    conn.commit()


@router.on("shop", "order.hang", rehearse=True, timeout_seconds=0.5)
def hangs(event: Event, conn: psycopg.Connection[Any]) -> None:
    conn.execute("select pg_sleep(30)")


@router.on("mail")
def sends(event: Event, conn: psycopg.Connection[Any]) -> None:
    called_out.append(event.id)
    time.sleep(0)
