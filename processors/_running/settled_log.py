"""What the worker logs of its events' outcomes: a failure as it happens, with the event's
fields bound, and, once a batch has committed, its lines (``log_events``: one per batch, one
per event, or none)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from inbox._core.logs import get_logger
from processors._model.claimed import ClaimedEvent
from processors._model.decide import Decision, outcome_counts
from processors._model.event import Event

__all__ = ["event_log", "log_failure", "log_settled"]

log = get_logger("processors.worker")


def log_settled(
    mode: str,
    worker: str,
    batch: Sequence[ClaimedEvent],
    decisions: Sequence[Decision],
    seconds: float,
) -> None:
    """After the commit, so a line says what is durably done (failures were logged as
    they happened)."""
    if mode == "batch":
        log.info(
            "batch_processed",
            worker=worker,
            events=len(decisions),
            **outcome_counts(decisions),
            sources=dict(Counter(item.event.source for item in batch)),
            duration_ms=round(seconds * 1000, 1),
        )
    elif mode == "event":
        events = {item.event.id: item.event for item in batch}
        for decision in decisions:
            if decision.outcome != "processed":
                continue
            event = events[decision.event_id]
            log.info(
                "event_processed",
                event_id=event.id,
                source=event.source,
                key=event.key,
                type=event.type,
                handler=decision.handler,
                attempt=event.attempt,
                replay_id=decision.replay_id,
                worker=worker,
                duration_ms=round(
                    (decision.finished_at - decision.started_at).total_seconds() * 1000, 1
                ),
            )


def event_log(event: Event, worker: str) -> Any:
    """The worker's logger with ``event``'s fields bound."""
    return log.bind(
        event_id=event.id,
        source=event.source,
        type=event.type,
        attempt=event.attempt,
        worker=worker,
    )


def log_failure(event: Event, decision: Decision, worker: str) -> None:
    """An attempt that did not process its event: a retry asked for, a dead letter, or a
    failure that will be tried again."""
    bound = event_log(event, worker)
    if decision.outcome == "retry":
        bound.info("event_retry_requested", after_seconds=decision.delay_seconds)
    elif decision.outcome == "dead":
        bound.error(
            "event_dead",
            error=f"{decision.error_class}: {decision.error_message}",
            exception=decision.error_traceback,
        )
    else:
        # "exception" is where structlog's renderers expect a formatted traceback.
        bound.warning(
            "handler_failed",
            error=f"{decision.error_class}: {decision.error_message}",
            retry_in_seconds=round(decision.delay_seconds, 3),
            exception=decision.error_traceback,
        )
