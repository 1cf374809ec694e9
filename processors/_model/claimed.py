"""What a claim holds of an event: its work row's counters (``Claimed``, what a decision is
made from) and, with it, the event a handler receives, its ordering key and its receipt's
trace context (``ClaimedEvent``). The store makes them, the batch runner and the worker pass
them on."""

from __future__ import annotations

from dataclasses import dataclass

from processors._model.event import Event

__all__ = ["Claimed", "ClaimedEvent"]


# Claimed (and ClaimedEvent) are built for every event, so they are not frozen: a frozen
# dataclass sets each field through object.__setattr__, which showed in a drain's profile.
# Nothing changes one once built.
@dataclass(slots=True)
class Claimed:
    """A claimed work row: how often it failed before, and how often it crashed a worker."""

    event_id: int
    attempts: int
    crashes: int
    replay_id: int | None


@dataclass(slots=True)
class ClaimedEvent:
    claimed: Claimed
    event: Event
    ordering_key: str | None = None
    """The event's key within its source when the source is ordered."""
    # The receipt's W3C trace context (null when it was not traced; a tracestate only when
    # the receipt's span carried one): the handler span's link.
    traceparent: str | None = None
    tracestate: str | None = None
