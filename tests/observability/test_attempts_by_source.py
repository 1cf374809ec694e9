"""``inbox_attempts_total`` by source and outcome, counted by a real worker on a real
database: an operator reads a source's failures from it."""

from __future__ import annotations

from typing import Any

import psycopg

from inbox import InboxWriter
from processors import Event, Router
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

