"""Attempt outcomes and backoff, as pure decisions."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from processors import Retry
from processors._model.claimed import Claimed
from processors._model.decide import Policy, backoff_seconds, decide

POLICY = Policy(
    max_attempts=3,
    max_crashes=5,
    backoff_base_seconds=1.0,
    backoff_max_seconds=10.0,
    unrouted="skip",
)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _decide(attempts: int, error: BaseException | None) -> object:
    return decide(
        Claimed(event_id=1, attempts=attempts, crashes=0, replay_id=None),
        policy=POLICY,
        handler="h",
        error=error,
        started_at=NOW,
        finished_at=NOW,
        rng=random.Random(1),
    )


def test_backoff_window_doubles_up_to_the_cap_with_full_jitter() -> None:
    rng = random.Random(42)
    for failures, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (30, 10.0)]:
        draws = [backoff_seconds(failures, 1.0, 10.0, rng) for _ in range(500)]
        assert all(0.0 <= d <= ceiling for d in draws)
        assert max(draws) > 0.9 * ceiling  # the whole window is used, not a fixed delay


def test_success_failure_dead_and_retry() -> None:
    ok = _decide(0, None)
    assert (ok.outcome, ok.state, ok.attempt) == ("processed", "done", 1)  # type: ignore[attr-defined]
    failed = _decide(0, RuntimeError("boom"))
    assert (failed.outcome, failed.state, failed.attempt) == ("failed", "pending", 1)  # type: ignore[attr-defined]
    assert 0.0 <= failed.delay_seconds <= 1.0  # type: ignore[attr-defined]
    dead = _decide(2, RuntimeError("boom"))
    assert (dead.outcome, dead.state, dead.attempt) == ("dead", "dead", 3)  # type: ignore[attr-defined]
    retry = _decide(2, Retry(after=30))
    assert (retry.outcome, retry.state, retry.attempt, retry.delay_seconds) == (  # type: ignore[attr-defined]
        "retry",
        "pending",
        2,
        30.0,
    )


def test_an_idle_worker_waits_for_its_poll_or_the_next_due_event() -> None:
    from processors._model.decide import idle_wait_seconds

    assert idle_wait_seconds(5.0, None) == 5.0
    assert idle_wait_seconds(5.0, 60.0) == 5.0
    assert 0.3 <= idle_wait_seconds(60.0, 0.3) < 0.31
    assert 0.0 < idle_wait_seconds(60.0, -1.0) < 0.01  # already due: look again at once


def test_a_traceback_is_bounded_from_its_start() -> None:
    from processors._model.decide import bounded_traceback

    def fails() -> None:
        raise ValueError("x" * 50 + "\x00 end")

    try:
        fails()
    except ValueError as exc:
        error = exc
    whole = bounded_traceback(error)
    assert whole.startswith("Traceback (most recent call last):\n")
    assert whole.endswith("ValueError: " + "x" * 50 + "\\x00 end\n")  # NUL is not storable
    cut = bounded_traceback(error, limit=120)
    assert len(cut) == 120
    assert cut.startswith("... (start of the traceback cut: ")
    assert cut.endswith(whole[-60:])
