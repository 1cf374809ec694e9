"""What becomes of an attempt: pure decisions, no I/O.

The worker runs handlers and hands each result here; the store writes the decisions in one
statement per batch.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from processors._errors import ProcessingError
from processors._event import Retry

__all__ = ["Claimed", "Decision", "Policy", "backoff_seconds", "decide"]

OutcomeName = Literal["processed", "skipped", "failed", "retry", "dead", "crashed", "released"]
StateName = Literal["done", "pending", "dead"]

MAX_ERROR_MESSAGE = 2000


@dataclass(frozen=True, slots=True)
class Policy:
    max_attempts: int
    max_crashes: int
    backoff_base_seconds: float
    backoff_max_seconds: float
    unrouted: Literal["skip", "fail"]


@dataclass(frozen=True, slots=True)
class Claimed:
    """A claimed work row: how often it failed before, and how often it crashed a worker."""

    event_id: int
    attempts: int
    crashes: int
    replay_id: int | None


@dataclass(frozen=True, slots=True)
class Decision:
    event_id: int
    attempt: int
    outcome: OutcomeName
    state: StateName
    delay_seconds: float
    started_at: datetime
    finished_at: datetime
    handler: str | None
    error_class: str | None
    error_message: str | None
    replay_id: int | None


class HandlerTimeoutError(ProcessingError):
    """The handler did not finish within its deadline."""


class HandlerLeftTransactionAbortedError(ProcessingError):
    """The handler returned normally after one of its statements failed: the transaction is
    aborted, so nothing it wrote can commit."""


class NoRouteError(ProcessingError):
    """No handler is routed for the event (with ``unrouted = "fail"``)."""


def backoff_seconds(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**(failures-1))].

    Full jitter spreads a thundering herd of failures (say, a downstream outage) over the
    whole window instead of retrying them in lockstep.
    """
    ceiling = min(cap, base * 2.0 ** max(failures - 1, 0))
    return rng.uniform(0.0, ceiling)


def _storable(text: str) -> str:
    """``text`` as PostgreSQL text can hold it: no NUL, no lone surrogate (say, from a file
    name that was not UTF-8). A message the settle could not store would roll the whole
    batch back and charge every event in it with a crash."""
    escaped = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace")
    return escaped.decode("utf-8")[:MAX_ERROR_MESSAGE]


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a handler's exception with a broken __str__
        text = ""
    return _storable(text or type(exc).__name__)


def decide(
    claimed: Claimed,
    *,
    policy: Policy,
    handler: str | None,
    error: BaseException | None,
    started_at: datetime,
    finished_at: datetime,
    rng: random.Random,
) -> Decision:
    """The decision for one attempt that ran (error None = the handler returned)."""

    def make(
        outcome: OutcomeName,
        state: StateName,
        attempts: int,
        delay: float = 0.0,
        error_class: str | None = None,
        error_message: str | None = None,
    ) -> Decision:
        return Decision(
            event_id=claimed.event_id,
            attempt=attempts,
            outcome=outcome,
            state=state,
            delay_seconds=delay,
            started_at=started_at,
            finished_at=finished_at,
            handler=handler,
            error_class=error_class,
            error_message=error_message,
            replay_id=claimed.replay_id,
        )

    this_attempt = claimed.attempts + 1
    if error is None:
        return make("processed", "done", this_attempt)
    if isinstance(error, Retry):
        # Not a failure: the stored count stays, so Retry never leads to a dead letter.
        return make(
            "retry",
            "pending",
            claimed.attempts,
            error.after,
            "Retry",
            _storable(error.reason) if error.reason else None,
        )
    error_class = type(error).__name__
    if this_attempt >= policy.max_attempts:
        return make("dead", "dead", this_attempt, 0.0, error_class, _message(error))
    delay = backoff_seconds(
        this_attempt, policy.backoff_base_seconds, policy.backoff_max_seconds, rng
    )
    return make("failed", "pending", this_attempt, delay, error_class, _message(error))


def _not_run(
    claimed: Claimed,
    now: datetime,
    *,
    attempt: int,
    outcome: OutcomeName,
    state: StateName,
    error_class: str | None = None,
    error_message: str | None = None,
) -> Decision:
    """A decision taken without running a handler: it starts and ends at ``now``."""
    return Decision(
        event_id=claimed.event_id,
        attempt=attempt,
        outcome=outcome,
        state=state,
        delay_seconds=0.0,
        started_at=now,
        finished_at=now,
        handler=None,
        error_class=error_class,
        error_message=error_message,
        replay_id=claimed.replay_id,
    )


def decide_skipped(claimed: Claimed, *, now: datetime, reason: str) -> Decision:
    """No handler is routed, and the policy is to skip: settled, with the reason recorded."""
    return _not_run(
        claimed,
        now,
        attempt=claimed.attempts + 1,
        outcome="skipped",
        state="done",
        error_class="NoRoute",
        error_message=reason,
    )


def decide_crashed(claimed: Claimed, *, now: datetime) -> Decision:
    """Claimed ``crashes`` times without ever settling: dead-lettered without running again."""
    return _not_run(
        claimed,
        now,
        attempt=claimed.attempts,
        outcome="crashed",
        state="dead",
        error_class="Crashed",
        error_message=(
            f"claimed {claimed.crashes} times by workers that died before settling it"
            " (a poison pill: it kills or hangs its worker)"
        ),
    )


def decide_released(claimed: Claimed, *, now: datetime) -> Decision:
    """Claimed but not run (shutdown or the batch's time budget): back to the queue as is."""
    return _not_run(claimed, now, attempt=claimed.attempts, outcome="released", state="pending")
