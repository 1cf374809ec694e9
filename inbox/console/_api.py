"""The console's calls into the operator API (``inbox.queries``, the replay functions):
the one place that knows which function answers which page. No SQL here: the CLI and the
console share one copy of every query. Each function takes the pool's connection first."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from inbox import queries
from inbox._errors import EventNotFoundError
from inbox._operator_models import EventDetail, EventFilter, EventPage, Status
from inbox.console._filters import ParsedFilter

__all__ = ["Overview", "event_detail", "events_page", "overview", "search"]

Conn = psycopg.Connection[Any]

SEARCH_LIMIT = 50


@dataclass(frozen=True, slots=True)
class Overview:
    status: Status
    activity: Any = None
    """Per-minute received/processed/failed series (None until the API offers them)."""


def overview(conn: Conn, sources: Sequence[str], receiver_metrics: Sequence[str]) -> Overview:
    status = queries.status(conn, sources=sources, receiver_metrics=receiver_metrics)
    return Overview(status=status)


def events_page(conn: Conn, parsed: ParsedFilter) -> EventPage:
    assert parsed.event_filter is not None
    return queries.events(conn, parsed.event_filter, limit=parsed.limit, before=parsed.cursor)


def search(conn: Conn, text: str) -> list[int]:
    """The events ``text`` names: an id, ``SOURCE:KEY``, or a provider key in any source."""
    found: list[int] = []
    refs: list[int | str] = []
    if text.isdigit():
        refs.append(int(text))
    if ":" in text:
        refs.append(text)
    for ref in refs:
        with contextlib.suppress(EventNotFoundError, ValueError):
            found.append(queries.event(conn, ref).id)
    page = queries.events(conn, EventFilter(key=text), limit=SEARCH_LIMIT)
    found += [e.id for e in page.events]
    return sorted(set(found), reverse=True)


def events_by_id(conn: Conn, ids: Sequence[int]) -> EventPage:
    return queries.events(conn, EventFilter(ids=tuple(ids)), limit=max(1, len(ids)))


def event_detail(conn: Conn, event_id: int, redact: Collection[str]) -> EventDetail:
    return queries.event(conn, event_id, redact=redact)
