"""The event filter of the events, dead-letter and replay pages, read from a query string
or a form. A value that does not parse is reported next to its field, never a 500."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inbox._operations.selection import FILTER_STATES, EventFilter, FilterState
from inbox.queries import parse_time

__all__ = ["FILTER_FIELDS", "ParsedFilter", "parse_filter"]

FILTER_FIELDS = ("source", "type", "state", "after", "before", "repeats", "replayed")
# "replay" is the short form of "replay-queued" the routes document.
STATES = (*FILTER_STATES, "replay")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500


@dataclass
class ParsedFilter:
    values: dict[str, str]
    """What the form shows again: the fields as given."""
    event_filter: EventFilter | None
    """None when a field is wrong (see ``errors``)."""
    errors: dict[str, str] = field(default_factory=dict)
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None
    """The page token (opaque; checked by the operator API)."""
    repeats: bool = False
    replayed: bool = False

    @property
    def query(self) -> dict[str, str]:
        """The filter as query parameters (a stable URL for this view)."""
        return {k: v for k, v in self.values.items() if k in FILTER_FIELDS and v}

    def is_empty(self) -> bool:
        return not self.query


def _flag(value: str) -> bool:
    return value.lower() in ("1", "on", "true", "yes")


def parse_filter(params: Mapping[str, Any], *, state: str | None = None) -> ParsedFilter:
    """``state`` forces one (the dead-letter page is ``dead``)."""
    values = {k: str(params.get(k) or "").strip() for k in (*FILTER_FIELDS, "cursor", "limit")}
    if state is not None:
        values["state"] = state
    errors: dict[str, str] = {}
    times = {}
    for name in ("after", "before"):
        if values[name]:
            try:
                times[name] = parse_time(values[name])
            except ValueError as exc:
                errors[name] = str(exc)
    if values["state"] and values["state"] not in STATES:
        errors["state"] = f"unknown state {values['state']!r}; one of {', '.join(STATES)}"
    if values["source"] and len(values["source"]) > 200:
        errors["source"] = "a source name is at most 200 characters"
    limit = DEFAULT_LIMIT
    if values["limit"]:
        try:
            limit = int(values["limit"])
            if not 1 <= limit <= MAX_LIMIT:
                raise ValueError
        except ValueError:
            errors["limit"] = f"a whole number from 1 to {MAX_LIMIT}"
            limit = DEFAULT_LIMIT
    cursor = values["cursor"] or None
    parsed = ParsedFilter(
        values=values,
        event_filter=None,
        errors=errors,
        limit=limit,
        cursor=cursor,
        repeats=_flag(values["repeats"]),
        replayed=_flag(values["replayed"]),
    )
    if errors:
        return parsed
    chosen = "replay-queued" if values["state"] == "replay" else values["state"]
    states: tuple[FilterState, ...] | None = None
    if chosen:
        states = (next(s for s in FILTER_STATES if s == chosen),)
    try:
        parsed.event_filter = EventFilter(
            source=values["source"] or None,
            type=values["type"] or None,
            states=states,
            since=times.get("after"),
            until=times.get("before"),
            repeats=True if parsed.repeats else None,
            replayed=True if parsed.replayed else None,
        )
    except ValueError as exc:
        parsed.errors["after" if "range" in str(exc) else "state"] = str(exc)
    return parsed
