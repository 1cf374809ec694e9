"""Writing events and running an in-process worker (``processors.testing``) in the tests."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg

from inbox import InboxWriter
from inbox._core.config.settings import WorkerSettings
from processors import Event, Router, WorkerMetrics
from processors.testing import run_until
from tests._wait import scalar

FAST = {
    "poll_interval_seconds": 0.5,
    "backoff_base_seconds": 0.01,
    "backoff_max_seconds": 0.05,
}
# Full jitter draws a failure's delay from [0, base]: with a week, the chance that a failed
# event is retried within a test's second or so is ~1 in 600,000 (at 60 s it was ~1 in 600).
NO_RETRY_SOON = {"backoff_base_seconds": 604_800, "backoff_max_seconds": 604_800}


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


def as_configured() -> dict[str, Any]:
    """``[database] pooler`` and ``listen_url`` as ``inbox worker`` reads them from this
    environment (tests/pooler sets them): a worker in the test's process runs as the
    command would."""
    return {
        "pooler": os.environ.get("INBOX_DATABASE__POOLER", "auto"),
        "listen_dsn": os.environ.get("INBOX_DATABASE__LISTEN_URL"),
    }


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
    options = {**as_configured(), **options}
    try:
        return run_until(url, router, condition, settings=worker_settings or settings(), **options)
    except TimeoutError:
        timeout = options.get("timeout", 30)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}") from None


def run_until_settled(
    url: str, router: Router, *, worker_url: str | None = None, **options: Any
) -> WorkerMetrics:
    """Run a worker (on ``worker_url``, else ``url``) until no event is pending: each one
    processed or dead (a dead letter keeps its work row)."""
    options.setdefault("what", "every pending event to settle")
    return run_worker_until(worker_url or url, router, lambda: work_left(url) == 0, **options)


def run_until_empty(
    url: str, router: Router, *, worker_url: str | None = None, **options: Any
) -> WorkerMetrics:
    """Run a worker (on ``worker_url``, else ``url``) until the work table is empty: every
    event processed, none dead."""
    options.setdefault("what", "an empty work table")
    return run_worker_until(
        worker_url or url,
        router,
        lambda: scalar(url, "select count(*) from inbox_work") == 0,
        **options,
    )


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


def all_attempted(url: str, count: int) -> Callable[[], bool]:
    """A condition: ``count`` attempts are recorded."""
    return lambda: scalar(url, "select count(*) from inbox_attempts") >= count


def paid_ids(url: str) -> list[int]:
    """The event ids of the payments table's rows, in order (repeats kept)."""
    return list(scalar(url, "select array_agg(event_id order by event_id) from payments") or [])


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


def attempts_beside(url: str, ids: list[int], odd: int) -> list[tuple[str, str | None]]:
    """The attempts of event ``odd``, once every other event of ``ids`` is seen processed
    at its first attempt."""
    outcomes = attempt_outcomes(url)
    odd_ones = outcomes.pop(odd)
    assert outcomes == {i: [("processed", None)] for i in ids if i != odd}
    return odd_ones


PAY = "insert into payments (event_id) values (%s)"


def paying_router(
    calls: Counter[int],
    raises_at: int,
    fail: BaseException | Callable[[Any], Any],
    *,
    sync: bool = False,
) -> Router:
    """A handler (async, or ``sync``) that counts its calls by event n and writes a payment;
    for the event whose n is ``raises_at``, after its write was sent, it raises ``fail``, or
    calls ``fail`` with its connection (and, when async, awaits what that returns)."""
    router = Router()

    def failing(conn: Any) -> Any:
        if isinstance(fail, BaseException):
            raise fail
        return fail(conn)

    if sync:

        @router.on("shop")
        def pay_sync(event: Event, conn: psycopg.Connection[Any]) -> None:
            n = event.json()["n"]
            calls[n] += 1
            conn.execute(PAY, [event.id])
            if n == raises_at:
                failing(conn)

    else:

        @router.on("shop")
        async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
            n = event.json()["n"]
            calls[n] += 1
            await conn.execute(PAY, [event.id])
            if n == raises_at:
                await failing(conn)

    return router
