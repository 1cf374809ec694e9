"""The lines a committed batch logs (``log_events``: one per batch, one per event, or none)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from inbox._core.logs import get_logger
from processors._decide import Decision, outcome_counts
from processors._store import ClaimedEvent

__all__ = ["log_settled"]

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
