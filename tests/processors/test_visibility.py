"""What an operator sees of the worker: success logs, failure tracebacks, retries on time."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from structlog.testing import capture_logs

from processors import Event, Retry, Router
from processors._model.decide import MAX_TRACEBACK
from tests._wait import scalar
from tests.processors._support import (
    run_until_first_attempt,
    run_until_settled,
    settings,
    write_events,
)


def _retry_once(after: float, clocks: list[Any] | None = None) -> Router:
    """A router whose "shop" handler asks for a retry on its first call only. With
    ``clocks``, each call appends the server's (now(), clock_timestamp()): a retry is due
    ``after`` past the first claim transaction's now(), on the server's clock."""
    router = Router()
    calls: list[int] = []

    @router.on("shop")
    async def later(event: Event, conn: Any) -> None:
        calls.append(event.id)
        if clocks is not None:
            cursor = await conn.execute("select now(), clock_timestamp()")
            clocks.append(await cursor.fetchone())
        if len(calls) == 1:
            raise Retry(after=after)

    return router


def _charge(card: str) -> None:
    raise RuntimeError(f"card {card} declined")


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_failed_attempt_keeps_its_traceback_and_the_worker_logs_it(
    db_url: str, worker_url: str, kind: str
) -> None:
    write_events(db_url, 1)
    router = Router()

    if kind == "async":

        @router.on("shop")
        async def pay(event: Event, conn: Any) -> None:
            _charge("4242")

    else:

        @router.on("shop")
        def pay_sync(event: Event, conn: Any) -> None:
            _charge("4242")

    with capture_logs() as logs:
        run_until_first_attempt(worker_url, router)
    stored = scalar(db_url, "select error_traceback from inbox_attempts")
    assert stored.startswith("Traceback (most recent call last):\n")
    assert stored.endswith("RuntimeError: card 4242 declined\n")
    assert "in _charge" in stored
    assert "in pay" in stored  # the handler's frame, named
    # It opens on the handler: the frames of the worker and of anyio that called it are
    # not what an operator is looking for.
    assert "_batch.py" not in stored
    assert "anyio" not in stored
    [failed] = [e for e in logs if e["event"] == "handler_failed"]
    assert failed["exception"] == stored
    assert failed["error"] == "RuntimeError: card 4242 declined"


def _deep_failure(levels: int) -> None:
    # Each level wraps the one below, so the printed chain grows with every level.
    try:
        if levels == 0:
            raise KeyError("the root cause")
        _deep_failure(levels - 1)
    except Exception as exc:
        raise RuntimeError(f"level {levels} failed") from exc


def test_a_long_traceback_is_cut_at_its_start_and_stored_within_the_bound(
    db_url: str, worker_url: str
) -> None:
    write_events(db_url, 1)
    router = Router()

    @router.on("shop")
    async def deep(event: Event, conn: Any) -> None:
        _deep_failure(60)

    run_until_first_attempt(worker_url, router)
    stored = scalar(db_url, "select error_traceback from inbox_attempts")
    assert len(stored) <= MAX_TRACEBACK
    assert len(stored) > MAX_TRACEBACK - 200  # cut to the bound, not far below it
    assert stored.startswith("... (start of the traceback cut: ")
    # The end is what matters: the frame that raised last and the exception itself.
    assert stored.endswith("RuntimeError: level 60 failed\n")
    assert "in deep" in stored.splitlines()[-5]


def test_retry_and_skip_store_no_traceback(db_url: str, worker_url: str) -> None:
    write_events(db_url, 1)
    write_events(db_url, 1, source="other")
    router = _retry_once(after=0.01)
    run_until_settled(db_url, router, worker_url=worker_url)
    rows = scalar(
        db_url,
        "select array_agg(outcome || ':' || (error_traceback is null) order by id)"
        " from inbox_attempts",
    )
    assert sorted(rows) == ["processed:true", "retry:true", "skipped:true"]


def _run_logged(db_url: str, worker_url: str, mode: str, count: int) -> list[dict[str, Any]]:
    write_events(db_url, count)
    write_events(db_url, 2, source="crm", event_type="contact.created")
    router = Router()

    @router.on("*")
    async def ok(event: Event, conn: Any) -> None:
        pass

    with capture_logs() as logs:
        run_until_settled(
            db_url,
            router,
            worker_url=worker_url,
            worker_settings=settings(log_events=mode),
        )
    return logs


def test_each_committed_batch_is_logged_with_its_counts_sources_and_duration(
    db_url: str,
    worker_url: str,
) -> None:
    logs = _run_logged(db_url, worker_url, "batch", 5)
    batches = [e for e in logs if e["event"] == "batch_processed"]
    assert batches, logs
    assert all(b["log_level"] == "info" for b in batches)
    assert sum(b["processed"] for b in batches) == 7
    assert all(b.get("failed", 0) == 0 for b in batches)
    assert sum(b["events"] for b in batches) == 7
    sources: dict[str, int] = {}
    for b in batches:
        assert b["duration_ms"] >= 0
        for name, n in b["sources"].items():
            sources[name] = sources.get(name, 0) + n
    assert sources == {"shop": 5, "crm": 2}
    assert not [e for e in logs if e["event"] == "event_processed"]


def test_log_events_event_logs_a_line_per_processed_event(db_url: str, worker_url: str) -> None:
    logs = _run_logged(db_url, worker_url, "event", 5)
    lines = [e for e in logs if e["event"] == "event_processed"]
    ids = scalar(db_url, "select array_agg(id order by id) from inbox_events")
    assert sorted(e["event_id"] for e in lines) == ids
    first = min(lines, key=lambda e: e["event_id"])
    assert (first["source"], first["key"], first["type"], first["attempt"]) == (
        "shop",
        "key-0",
        "order.paid",
        1,
    )
    assert first["handler"].endswith("ok")
    assert not [e for e in logs if e["event"] == "batch_processed"]


def test_log_events_none_logs_nothing_on_success(db_url: str, worker_url: str) -> None:
    logs = _run_logged(db_url, worker_url, "none", 3)
    assert not [e for e in logs if e["event"] in ("batch_processed", "event_processed")]


def _run_on_a_slow_poll(db_url: str, worker_url: str, router: Router) -> None:
    # The queue must empty in far less than the poll interval: only a worker that wakes
    # for the retry itself can do that.
    run_until_settled(
        db_url,
        router,
        worker_url=worker_url,
        worker_settings=settings(poll_interval_seconds=60),
        timeout=10,
        what="the retry to run (a worker waiting for its 60 s poll would not)",
    )


def test_a_retry_runs_when_due_not_at_the_next_poll(db_url: str, worker_url: str) -> None:
    write_events(db_url, 1)
    clocks: list[Any] = []
    _run_on_a_slow_poll(db_url, worker_url, _retry_once(after=0.3, clocks=clocks))
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("select outcome from inbox_attempts order by id").fetchall()
    assert [r[0] for r in rows] == ["retry", "processed"]
    # The first claim's transaction start (the retry's run_at is 0.3 s past it) and the
    # moment the last run began, both on the server's clock.
    gap = (clocks[-1][1] - clocks[0][0]).total_seconds()
    assert 0.3 <= gap < 5.0, f"the retry ran {gap:.3f} s after it was scheduled"


def test_a_retry_another_process_scheduled_is_found_in_the_table(
    db_url: str, worker_url: str
) -> None:
    # As a worker that scheduled a retry and then stopped would leave it.
    [event_id] = write_events(db_url, 1)
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "update inbox_work set run_at = now() + interval '0.5 s', attempts = 1,"
            " last_error = 'RuntimeError: earlier' where event_id = %s",
            [event_id],
        )
    due_at = scalar(db_url, "select run_at from inbox_work")
    router = Router()

    @router.on("shop")
    async def ok(event: Event, conn: Any) -> None:
        pass

    _run_on_a_slow_poll(db_url, worker_url, router)
    started = scalar(db_url, "select started_at from inbox_attempts")
    late = (started - due_at).total_seconds()
    assert 0.0 <= late < 5.0, f"ran {late:.3f} s after it fell due"
