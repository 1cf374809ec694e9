"""``inbox_attempts_total`` by source and outcome, counted by a real worker on a real
database: an operator reads a source's failures from it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from inbox import InboxWriter
from processors import Event, Router
from tests._wait import scalar
from tests.processors._support import NO_RETRY_SOON, all_attempted, run_worker_until, settings


def attempt_samples(registry: Any) -> dict[tuple[str, str], float]:
    """Every ``inbox_attempts_total`` sample, by (source, outcome)."""
    found = {}
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == "inbox_attempts_total":
                found[(sample.labels["source"], sample.labels["outcome"])] = sample.value
    return found


def test_each_source_counts_its_own_outcomes(db_url: str) -> None:
    router = Router()

    @router.on("*")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        if event.json()["fail"]:
            raise RuntimeError(f"{event.source} is down")

    with InboxWriter(db_url) as writer:
        for source, key, fail in [
            ("shop", "ok-1", False),
            ("shop", "ok-2", False),
            ("shop", "bad-1", True),
            ("bank", "ok-1", False),
            ("bank", "bad-1", True),
            ("bank", "bad-2", True),
        ]:
            writer.write(source, key, b'{"fail": %s}' % (b"true" if fail else b"false"))

    # A failure's retry is a week away: each event is settled exactly once.
    metrics = run_worker_until(
        db_url,
        router,
        all_attempted(db_url, 6),
        worker_settings=settings(**NO_RETRY_SOON),
        what="one attempt of each event",
    )

    assert attempt_samples(metrics.registry) == {
        ("shop", "processed"): 2,
        ("shop", "failed"): 1,
        ("bank", "processed"): 1,
        ("bank", "failed"): 2,
    }


def test_an_event_released_because_its_key_is_busy_counts_under_its_source(db_url: str) -> None:
    """Two batches meet on an ordered key: the claim could not see the other batch's claim
    of the key (committed after the claim began), so the key's slot releases the event
    unrun. It is counted as released, by its source, with the rest of its batch."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    with InboxWriter(db_url, notify="off") as writer:
        head = writer.write(
            "ordered", "evt-5", b"{}", ordering_key="a", order_at=t0 + timedelta(seconds=5)
        ).event_id
    # Another worker's batch: its claim holds the key's head locked (for the whole test, so
    # the head is never a suspect to take over), and its side connection is counting the
    # claim: the counter, with the key's slot, is not committed yet.
    claim, other = psycopg.connect(db_url), psycopg.connect(db_url)
    try:
        claim.execute("select from inbox_work where event_id = %s for update", [head])
        other.execute(
            "insert into inbox_claims (event_id, source, ordering_key, last_worker)"
            " values (%s, 'ordered', 'a', 'other')",
            [head],
        )
        with InboxWriter(db_url) as writer:
            # Late, but first in the key's order: the head the claim sees, and takes.
            writer.write(
                "ordered", "evt-1", b"{}", ordering_key="a", order_at=t0 + timedelta(seconds=1)
            )
            plain = writer.write("plain", "p-1", b"{}").event_id
        committed = False

        def released_and_settled() -> bool:
            nonlocal committed
            if not committed:
                # The worker's count of its claim waits on the other's slot: let it commit.
                waiting = scalar(
                    db_url,
                    "select count(*) from pg_stat_activity where datname = current_database()"
                    " and wait_event_type = 'Lock' and pid <> all(%s)",
                    [[other.info.backend_pid, claim.info.backend_pid]],
                )
                if waiting:
                    other.commit()
                    committed = True
                return False
            return (
                scalar(db_url, "select count(*) from inbox_work where event_id = %s", [plain]) == 0
            )

        router = Router()

        @router.on("*")
        async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
            return None

        metrics = run_worker_until(
            db_url, router, released_and_settled, what="the busy key's event to be released"
        )
    finally:
        other.close()
        claim.close()

    samples = attempt_samples(metrics.registry)
    assert samples[("ordered", "released")] == 1
    assert samples[("plain", "processed")] == 1
