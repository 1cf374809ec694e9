"""What becomes of an attempt: pure decisions, no I/O.

The worker runs handlers and hands each result here; the store writes the decisions in one
statement per batch.
"""

from __future__ import annotations

import random
import traceback
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Literal

from processors._model.claimed import Claimed
from processors._model.errors import NoRouteError
from processors._model.event import Retry

__all__ = [
    "Decision",
    "Policy",
    "backoff_seconds",
    "bounded_traceback",
    "decide",
    "idle_wait_seconds",
    "outcome_counts",
    "reconnect_delay",
]

OutcomeName = Literal["processed", "skipped", "failed", "retry", "dead", "crashed", "released"]
StateName = Literal["done", "pending", "dead"]

MAX_ERROR_MESSAGE = 2000
# inbox_attempts.error_traceback's check (migration 0004).
MAX_TRACEBACK = 16384
# Reconnection after a lost connection: a short first retry, doubling, capped low, so a
# worker is back at work within this long of PostgreSQL accepting connections again.
RECONNECT_FIRST_SECONDS = 0.1
RECONNECT_MAX_SECONDS = 0.5
# An idle worker wakes this long after the next event falls due: the server's clock decides
# when it is due, and waking a hair early would only find nothing and wait again.
DUE_MARGIN_SECONDS = 0.005
# The frames of the machinery that called the handler: a traceback starts at the first
# frame that is not one of theirs, so it opens on the handler's own code.
_MACHINERY = ("processors.", "anyio.", "asyncio.")


@dataclass(frozen=True, slots=True)
class Policy:
    max_attempts: int
    max_crashes: int
    backoff_base_seconds: float
    backoff_max_seconds: float
    unrouted: Literal["skip", "fail"]


# Built for every event, so not frozen (as Claimed, processors._model.claimed).
@dataclass(slots=True)
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
    error_traceback: str | None = None


def backoff_seconds(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**(failures-1))].

    Full jitter spreads a thundering herd of failures (say, a downstream outage) over the
    whole window instead of retrying them in lockstep.
    """
    ceiling = min(cap, base * 2.0 ** max(failures - 1, 0))
    return rng.uniform(0.0, ceiling)


def _escaped(text: str) -> str:
    """``text`` as PostgreSQL text can hold it: no NUL, no lone surrogate (say, from a file
    name that was not UTF-8). A message the settle could not store would roll the whole
    batch back and charge every event in it with a crash."""
    escaped = text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace")
    return escaped.decode("utf-8")


def _storable(text: str) -> str:
    return _escaped(text)[:MAX_ERROR_MESSAGE]


def _handler_frames(tb: TracebackType | None) -> TracebackType | None:
    while tb is not None and tb.tb_next is not None:
        if not str(tb.tb_frame.f_globals.get("__name__", "")).startswith(_MACHINERY):
            break
        tb = tb.tb_next
    return tb


def bounded_traceback(error: BaseException, limit: int = MAX_TRACEBACK) -> str:
    """The formatted traceback of ``error`` (with its causes), at most ``limit`` characters.

    When it must be cut, the start goes: the end holds the frame that raised and the
    exception itself, which is what an operator reads first.
    """
    try:
        lines = traceback.format_exception(type(error), error, _handler_frames(error.__traceback__))
        text = _escaped("".join(lines))
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails in formatting
        text = _escaped(f"{type(error).__name__} (its traceback could not be formatted)\n")
    if len(text) <= limit:
        return text
    marker = "... (start of the traceback cut: {} characters)\n"
    keep = limit - len(marker.format(len(text)))
    return marker.format(len(text) - keep) + text[-keep:]


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a handler's exception with a broken __str__
        text = ""
    return _storable(text or type(exc).__name__)


def _decision(
    claimed: Claimed,
    attempt: int,
    outcome: OutcomeName,
    state: StateName,
    started_at: datetime,
    finished_at: datetime | None = None,
    *,
    handler: str | None = None,
    delay_seconds: float = 0.0,
    error: tuple[str, str | None] | None = None,
    failure: BaseException | None = None,
) -> Decision:
    """The one place a ``Decision`` is built. Without ``finished_at`` it took no time (no
    handler ran); ``error`` is what the attempt records (class, message), ``failure`` the
    exception whose traceback it keeps (a handler's own, never a ``Retry`` or a missing
    route)."""
    error_class, error_message = error or (None, None)
    return Decision(
        event_id=claimed.event_id,
        attempt=attempt,
        outcome=outcome,
        state=state,
        delay_seconds=delay_seconds,
        started_at=started_at,
        finished_at=started_at if finished_at is None else finished_at,
        handler=handler,
        error_class=error_class,
        error_message=error_message,
        replay_id=claimed.replay_id,
        error_traceback=None if failure is None else bounded_traceback(failure),
    )


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
    this_attempt = claimed.attempts + 1
    outcome: OutcomeName = "processed"
    state: StateName = "done"
    attempt, delay = this_attempt, 0.0
    recorded: tuple[str, str | None] | None = None
    if isinstance(error, Retry):
        # Not a failure: the stored count stays, so Retry never leads to a dead letter.
        outcome, state, attempt, delay = "retry", "pending", claimed.attempts, error.after
        recorded = ("Retry", _storable(error.reason) if error.reason else None)
    elif error is not None:
        recorded = (type(error).__name__, _message(error))
        if this_attempt >= policy.max_attempts:
            outcome, state = "dead", "dead"
        else:
            outcome, state = "failed", "pending"
            delay = backoff_seconds(
                this_attempt, policy.backoff_base_seconds, policy.backoff_max_seconds, rng
            )
    return _decision(
        claimed,
        attempt,
        outcome,
        state,
        started_at,
        finished_at,
        handler=handler,
        delay_seconds=delay,
        error=recorded,
        # A failure keeps where it happened; a Retry is a request, not a failure, and a
        # missing route happened nowhere.
        failure=None if isinstance(error, Retry | NoRouteError) else error,
    )


def decide_skipped(claimed: Claimed, *, now: datetime, reason: str) -> Decision:
    """No handler is routed, and the policy is to skip: settled, with the reason recorded."""
    return _decision(
        claimed, claimed.attempts + 1, "skipped", "done", now, error=("NoRoute", reason)
    )


def decide_crashed(claimed: Claimed, *, now: datetime) -> Decision:
    """Claimed ``crashes`` times without ever settling: dead-lettered without running again."""
    why = (
        f"claimed {claimed.crashes} times by workers that died before settling it"
        " (a poison pill: it kills or hangs its worker)"
    )
    return _decision(claimed, claimed.attempts, "crashed", "dead", now, error=("Crashed", why))


def decide_released(claimed: Claimed, *, now: datetime) -> Decision:
    """Claimed but not run (shutdown or the batch's time budget): back to the queue as is."""
    return _decision(claimed, claimed.attempts, "released", "pending", now)


def outcome_counts(decisions: Iterable[Decision]) -> dict[str, int]:
    """How many of a batch's decisions had each outcome (for its log line)."""
    counts: Counter[str] = Counter(d.outcome for d in decisions)
    return {"processed": counts.pop("processed", 0), **counts}


def idle_wait_seconds(poll_interval: float, next_due_in: float | None) -> float:
    """How long an idle worker waits for a wake-up: its poll interval, or less when an
    event (a scheduled retry) falls due sooner."""
    if next_due_in is None:
        return poll_interval
    return min(poll_interval, max(next_due_in, 0.0) + DUE_MARGIN_SECONDS)


def reconnect_delay(failures: int, rng: random.Random) -> float:
    """The wait before reconnection attempt ``failures`` (1, 2, ...): exponential from
    ``RECONNECT_FIRST_SECONDS``, capped at ``RECONNECT_MAX_SECONDS``, jittered down by up to
    half so that a fleet of workers does not reconnect in lockstep."""
    ceiling = min(RECONNECT_MAX_SECONDS, RECONNECT_FIRST_SECONDS * 2.0 ** max(failures - 1, 0))
    return ceiling * rng.uniform(0.5, 1.0)
