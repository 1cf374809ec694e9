"""What a handler receives, and how it asks for a later retry."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from processors._compat import hooks

__all__ = ["Event", "Retry"]


class Event(BaseModel):
    """One stored webhook, as a handler sees it. Immutable."""

    model_config = ConfigDict(frozen=True)

    id: int
    source: str
    key: str
    type: str | None
    received_at: datetime
    headers: dict[str, str]
    body: bytes
    attempt: int
    """1 for the first attempt; failed attempts so far + 1."""
    is_replay: bool = False
    replay_id: int | None = None
    is_rehearsal: bool = False
    """A rehearsal runs the handler in a transaction that always rolls back: what it does
    outside the database is not undone."""

    def json(self) -> Any:  # type: ignore[override]  # pydantic's deprecated .json() is not ours
        """The body parsed as JSON (raises ``ValueError`` when it is not JSON)."""
        return json.loads(self.body)


_FIELDS = frozenset(Event.model_fields)


def stored_event(
    *,
    id: int,
    source: str,
    key: str,
    type: str | None,
    received_at: datetime,
    headers: dict[str, str],
    body: bytes,
    attempt: int,
    replay_id: int | None,
) -> Event:
    """An ``Event`` of values our own schema typed (a claimed row), built without validation.

    ``Event.model_construct`` does the same for any model and any subset of fields, and its
    generic loop showed in a no-op event's worker CPU (benchmarks/ANALYSIS.md). Every field
    is given here, so what it would set is known: the values, all fields set, no extra and
    no private attributes (tests/processors/test_event.py pins that the result equals a
    validated ``Event``)."""
    values: dict[str, Any] = {
        "id": id,
        "source": source,
        "key": key,
        "type": type,
        "received_at": received_at,
        "headers": headers,
        "body": body,
        "attempt": attempt,
        "is_replay": replay_id is not None,
        "replay_id": replay_id,
        "is_rehearsal": False,
    }
    if not hooks().event_slots:
        return Event.model_construct(**values)
    event = Event.__new__(Event)
    # The model is frozen: its own __setattr__ refuses, as it should for handlers.
    object.__setattr__(event, "__dict__", values)
    # A set of its own: model_copy adds to it.
    object.__setattr__(event, "__pydantic_fields_set__", set(_FIELDS))
    object.__setattr__(event, "__pydantic_extra__", None)
    object.__setattr__(event, "__pydantic_private__", None)
    return event


class Retry(Exception):
    """Raise from a handler to run the event again after ``after`` seconds.

    Not a failure: the attempt count does not grow and the event is never dead-lettered for it.
    """

    def __init__(self, after: float = 0.0, reason: str = "") -> None:
        if after < 0:
            raise ValueError("Retry(after=...) must be zero or more seconds")
        self.after = float(after)
        self.reason = reason
        super().__init__(reason or f"retry after {after:g} s")
