"""Settling outcomes: what each does to the work row, the history and the crash counters."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import psycopg

from processors._decide import Claimed, decide_released
from processors._store import WorkStore
from tests._wait import scalar
from tests.processors._support import write_events


def test_a_released_suspect_keeps_the_crashes_it_caused_before(
    db_url: str, worker_url: str
) -> None:
    # A suspect (claimed 3 times by workers that died) and a fresh event are both claimed
    # again (counted: 4 and 1), then released unrun at shutdown. The suspect must keep its
    # 3 earlier crashes, or a poison pill could shed them and go back to ordinary batches.
    suspect, fresh = write_events(db_url, 2)
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "insert into inbox_claims (event_id, claims, last_worker) values (%s, 4, 'w'),"
            " (%s, 1, 'w')",
            [suspect, fresh],
        )
    now = datetime.now(UTC)
    decisions = [
        decide_released(Claimed(event_id=suspect, attempts=0, crashes=3, replay_id=None), now=now),
        decide_released(Claimed(event_id=fresh, attempts=0, crashes=0, replay_id=None), now=now),
    ]

    async def settle() -> None:
        async with await psycopg.AsyncConnection.connect(worker_url) as conn:
            await WorkStore().settle(conn, decisions, "w")
            await conn.commit()

    anyio.run(settle)
    with psycopg.connect(db_url) as conn:
        claims = dict(conn.execute("select event_id, claims from inbox_claims").fetchall())
    assert claims == {suspect: 3}
    assert scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 2
    assert scalar(db_url, "select count(*) from inbox_attempts") == 0
