"""Which events an operator means: the filter (``EventFilter``) that listings, searches
and replays select by, and the states it can ask for.

Shared by the CLI's options, the console's form and the API; ``params`` is the one
translation of a filter into the named parameters of ``select_events``
(``inbox/sql/operator.sql``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any, Literal

from inbox._operations.records import jsonable

__all__ = [
    "EVENT_STATES",
    "FILTER_STATES",
    "EventFilter",
    "EventState",
    "FilterState",
    "glob_to_like",
]

EventState = Literal["pending", "retrying", "processed", "skipped", "dead"]
"""Where an event is: waiting for its first attempt, waiting after a failed one, settled by
a handler, settled without one (no route, or an operator's skip), or a dead letter."""
EVENT_STATES: tuple[EventState, ...] = ("pending", "retrying", "processed", "skipped", "dead")
FilterState = Literal["pending", "retrying", "processed", "skipped", "dead", "replay-queued"]
"""What a filter can ask for: an event's state, or ``replay-queued`` (its pending work was
queued by a replay run; such an event is also ``pending`` or ``retrying``)."""
FILTER_STATES: tuple[FilterState, ...] = (*EVENT_STATES, "replay-queued")
# States only an event with a work row can be in: a filter of only these is driven from the
# small work table instead of walking the log.
_WORK_STATES = frozenset({"pending", "retrying", "dead", "replay-queued"})


def glob_to_like(pattern: str) -> str:
    """A shell-style glob (``invoice.*``, ``?``) as a LIKE pattern, LIKE's own wildcards
    escaped."""
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%").replace("?", "_")


@dataclass(frozen=True, slots=True)
class EventFilter:
    """Which events: every field given narrows the selection (None = any)."""

    ids: tuple[int, ...] | None = None
    source: str | None = None
    type: str | None = None
    """A glob over the event type: ``invoice.*``."""
    states: tuple[FilterState, ...] | None = None
    """Any of these (``replay-queued``: pending work queued by a replay run)."""
    since: datetime | None = None
    """Received at or after (inclusive)."""
    until: datetime | None = None
    """Received before (exclusive)."""
    key: str | None = None
    error: str | None = None
    """A case-insensitive substring of the last error."""
    repeats: bool | None = None
    """True: only events delivered more than once (a row in ``inbox_deliveries``)."""
    replayed: bool | None = None
    """True: only events some replay run or dead-letter retry included."""

    def __post_init__(self) -> None:
        for state in self.states or ():
            if state not in FILTER_STATES:
                raise ValueError(f"unknown state {state!r}; one of {', '.join(FILTER_STATES)}")
        if self.since and self.until and self.since >= self.until:
            raise ValueError("the received-between range is empty: since must be before until")

    def is_empty(self) -> bool:
        """No field is given: the filter selects every event."""
        return all(getattr(self, f.name) is None for f in fields(self))

    def params(self) -> dict[str, Any]:
        """The named parameters of the ``select_events`` query."""
        error = self.error
        states = self.states
        return {
            "ids": list(self.ids) if self.ids is not None else None,
            "source": self.source,
            "type_like": glob_to_like(self.type) if self.type is not None else None,
            "states": list(states) if states is not None else None,
            "work_only": True if states and _WORK_STATES.issuperset(states) else None,
            "since": self.since,
            "until": self.until,
            "key": self.key,
            "error_like": None if error is None else "%" + glob_to_like(error) + "%",
            "repeats": True if self.repeats else None,
            "replayed": True if self.replayed else None,
        }

    def to_json(self) -> dict[str, Any]:
        """Only the fields given: this is what a replay run records as its filter."""
        return {k: jsonable(v) for k, v in asdict(self).items() if v is not None and v is not False}
