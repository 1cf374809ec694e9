"""Settling outcomes: what each does to the work row, the history and the crash counters."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import anyio
import psycopg

from processors._claiming.store import WorkStore
from processors._model.claimed import Claimed
from processors._model.decide import Decision, Policy, decide, decide_released
from tests._wait import scalar
from tests.processors._support import write_events


def _settle(worker_url: str, decisions: list[Decision]) -> None:
    async def settle() -> None:
        async with await psycopg.AsyncConnection.connect(worker_url) as conn:
            received = await conn.execute(
                "select id, received_at from inbox_events where id = any(%s)",
                [[d.event_id for d in decisions]],
            )
            received_at = {row[0]: row[1] for row in await received.fetchall()}
            await WorkStore().settle(conn, decisions, "w", received_at)
            await conn.commit()

    anyio.run(settle)


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

    _settle(worker_url, decisions)
    with psycopg.connect(db_url) as conn:
        claims = dict(conn.execute("select event_id, claims from inbox_claims").fetchall())
    assert claims == {suspect: 3}
    assert scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 2
    assert scalar(db_url, "select count(*) from inbox_attempts") == 0


POLICY = Policy(
    max_attempts=5, max_crashes=3, backoff_base_seconds=1.0, backoff_max_seconds=60.0,
    unrouted="skip",
)  # fmt: skip


def _attempts(db_url: str) -> dict[int, tuple[object, ...]]:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "select event_id, outcome, handler, error_class, error_message, replay_id,"
            " error_traceback is not null from inbox_attempts"
        ).fetchall()
    return {row[0]: row[1:] for row in rows}


def test_every_decision_keeps_its_own_columns_whether_a_column_is_null_throughout_or_not(
    db_url: str, worker_url: str
) -> None:
    # The settle sends a nullable column that is null for every decision as one NULL array
    # (unnest pads it): a batch of successes and a mixed batch must both store each
    # decision's own values, in its own row.
    first, second, third, fourth = write_events(db_url, 4)
    now = datetime.now(UTC)

    def decided(event_id: int, error: BaseException | None, handler: str | None) -> Decision:
        claimed = Claimed(event_id=event_id, attempts=0, crashes=0, replay_id=None)
        return decide(
            claimed, policy=POLICY, handler=handler, error=error, started_at=now,
            finished_at=now, rng=random.Random(1),
        )  # fmt: skip

    _settle(worker_url, [decided(first, None, "h1"), decided(second, None, "h2")])
    assert _attempts(db_url) == {
        first: ("processed", "h1", None, None, None, False),
        second: ("processed", "h2", None, None, None, False),
    }
    try:
        raise ValueError("card declined")
    except ValueError as exc:
        failure = exc
    _settle(worker_url, [decided(third, None, "h1"), decided(fourth, failure, "h2")])
    attempts = _attempts(db_url)
    assert attempts[third] == ("processed", "h1", None, None, None, False)
    assert attempts[fourth] == ("failed", "h2", "ValueError", "card declined", None, True)
    assert scalar(db_url, "select count(*) from inbox_work") == 1
