"""Writing events and running an in-process worker (``processors.testing``) in the tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg

from inbox import InboxWriter
from inbox._core.settings import WorkerSettings
from processors import Event, Router, WorkerMetrics
from processors.testing import run_until
from tests._wait import scalar

FAST = {
    "poll_interval_seconds": 0.5,
    "backoff_base_seconds": 0.01,
    "backoff_max_seconds": 0.05,
}


def settings(**overrides: Any) -> WorkerSettings:
    return WorkerSettings(**{**FAST, **overrides})


def write_events(
    url: str, count: int, *, source: str = "shop", event_type: str = "order.paid"
) -> list[int]:
    with InboxWriter(url) as writer:
        return [
            writer.write(
                source, f"key-{n}", f'{{"n": {n}}}'.encode(), event_type=event_type
            ).event_id
            for n in range(count)
        ]


def create_business_table(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute("create table payments (event_id bigint not null, amount int, note text)")


def run_worker_until(
    url: str,
    router: Router,
    condition: Callable[[], bool],
    *,
    worker_settings: WorkerSettings | None = None,
    what: str = "the condition",
    **options: Any,  # run_until's concurrency, timeout
) -> WorkerMetrics:
    """``processors.testing.run_until`` with the tests' fast settings, failing the test
    with what was awaited."""
    try:
        return run_until(url, router, condition, settings=worker_settings or settings(), **options)
    except TimeoutError:
        timeout = options.get("timeout", 30)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None


def run_until_first_attempt(url: str, router: Router) -> WorkerMetrics:
    """Run a worker until one attempt is recorded; a failure's retry is an hour away."""
    return run_worker_until(
        url,
        router,
        lambda: scalar(url, "select count(*) from inbox_attempts") >= 1,
        worker_settings=settings(backoff_base_seconds=3600, backoff_max_seconds=3600),
        what="the first attempt",
    )


def work_left(url: str) -> int:
    """Events still pending in the queue."""
    return int(scalar(url, "select count(*) from inbox_work where state = 'pending'"))


def attempt_outcomes(url: str) -> dict[int, list[tuple[str, str | None]]]:
    """Each event's attempts so far, in order: (outcome, error class)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "select event_id, outcome, error_class from inbox_attempts order by id"
        ).fetchall()
    out: dict[int, list[tuple[str, str | None]]] = {}
    for event_id, outcome, error_class in rows:
        out.setdefault(event_id, []).append((outcome, error_class))
    return out


def paying_router(calls: Counter[int], raises_at: int, error: Exception) -> Router:
    """An async handler that counts its calls by event n, writes a payment, then raises
    ``error`` for the event whose n is ``raises_at`` (after its write was sent)."""
    router = Router()

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        n = event.json()["n"]
        calls[n] += 1
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])
        if n == raises_at:
            raise error

    return router
