"""Ordered keys under a SIGKILL storm: 50 keys x 40 events, written shuffled and
concurrently, run by 3 worker processes while one of them is killed every 0.5 s and
restarted. Each key's events must run one at a time, in order, each effect exactly once."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from inbox import AsyncInboxWriter
from tests._wait import rows, scalar, wait_for
from tests.processors._procs import QUICK_POLL, WorkerProcess

pytestmark = pytest.mark.slow

KEYS, PER_KEY = 50, 40
T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def _send_shuffled(url: str) -> None:
    """Every event at once, in a random order: only its provider timestamp (order_at) says
    where it belongs in its key."""
    events = [(k, n) for k in range(KEYS) for n in range(PER_KEY)]
    random.Random(14).shuffle(events)
    async with AsyncInboxWriter(url, notify="off", max_size=8) as writer:
        await asyncio.gather(
            *(
                writer.write(
                    "ordered",
                    f"evt_{k}_{n}",
                    json.dumps({"seq": n, "data": {"object": {"id": f"cus_{k}"}}}).encode(),
                    event_type="customer.updated",
                    ordering_key=f"cus_{k}",
                    order_at=T0 + timedelta(seconds=n),
                )
                for k, n in events
            )
        )


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.close()


def test_ordered_keys_keep_their_order_and_effects_through_a_sigkill_storm(
    db_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "create table ordered_effects (id bigint generated always as identity,"
            " event_id bigint not null, ordering_key text, seq int, prev_seen int, pid int)"
        )
    asyncio.run(_send_shuffled(db_url))
    env = {
        **QUICK_POLL,
        "FAULT_HANDLER_SLEEP_MS": "5",
        "INBOX_WORKER__BATCH_SIZE": "10",
        # Innocent events that a kill catches again and again must not be dead-lettered as
        # poison pills here: every kill lands on a batch in flight.
        "INBOX_WORKER__MAX_CRASHES": "1000",
    }
    workers.extend(WorkerProcess(db_url, tmp_path, n, **env) for n in range(3))
    rng = random.Random(7)
    kills = 0
    left = "select count(*) from inbox_work"
    holding: list[WorkerProcess] = []

    def some_hold_a_batch() -> bool:
        # A worker's claim counters are committed before its handlers run and deleted when
        # its batch commits: a worker that has one is mid-batch.
        pids = {
            int(p)
            for (p,) in rows(
                db_url,
                "select distinct split_part(split_part(last_worker, ':', 2), '/', 1)"
                " from inbox_claims",
            )
            if p.isdigit()
        }
        holding[:] = [w for w in workers if w.alive() and w.pid in pids]
        return bool(holding)

    # A restarted process takes seconds to import and connect on a busy machine: past its
    # first 8 kills the storm is bounded in time as well as in kills, and a quarter of the
    # backlog is left to drain after (on a quiet machine the first half drains in a few
    # seconds).
    storm_ends = time.monotonic() + 25
    while (
        kills < 40
        and (kills < 8 or time.monotonic() < storm_ends)
        and scalar(db_url, left) > KEYS * PER_KEY // 4
    ):
        # One kill every 0.5 s (the storm's clock, not a synchronisation), each landing on
        # a worker that holds a batch.
        time.sleep(0.5)
        wait_for(some_hold_a_batch, timeout=60, what="a worker to hold a batch")
        rng.choice(holding).kill()
        kills += 1
        workers.append(WorkerProcess(db_url, tmp_path, len(workers), **env))
    assert kills >= 8, f"only {kills} kills landed before the backlog drained"
    wait_for(lambda: scalar(db_url, left) == 0, timeout=120, what="the backlog to drain")
    for worker in workers:
        if worker.alive():
            assert worker.terminate() == 0, worker.output()

    effects = rows(db_url, "select ordering_key, seq, prev_seen from ordered_effects order by id")
    processed = scalar(
        db_url, "select count(distinct event_id) from inbox_attempts where outcome = 'processed'"
    )
    crashed = scalar(db_url, "select count(*) from inbox_attempts where outcome = 'crashed'")
    assert len(effects) == KEYS * PER_KEY, "an effect is missing or applied twice"
    by_key: dict[str, list[tuple[int, int | None]]] = {}
    for key, seq, prev in effects:
        by_key.setdefault(key, []).append((seq, prev))
    expected = [(n, None if n == 0 else n - 1) for n in range(PER_KEY)]
    wrong = {key: seen for key, seen in by_key.items() if seen != expected}
    assert not wrong, f"keys run out of order or overlapping: {list(wrong.items())[:2]}"
    assert len(by_key) == KEYS
    assert processed == KEYS * PER_KEY
    assert crashed == 0
