"""What the operator commands share: the event filter's options, a listing's page (its
options and its printing), event tables, confirmation, JSON printing (the argparse number
types both sides' commands use live in inbox._core.runtime.arguments)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from inbox._cli.logs import say
from inbox._core.config.settings import Settings
from inbox._core.errors import RefusedError
from inbox._core.runtime.arguments import MAX_BIGINT, port, positive_int
from inbox._core.runtime.resolve import database_url
from inbox._operations.models import EventSummary
from inbox._operations.records import WorkerVersion
from inbox._operations.selection import EVENT_STATES, EventFilter
from inbox._operations.term import Cell, relative, table, use_colour
from inbox.queries import events, parse_time

__all__ = [
    "MAX_BIGINT",
    "STATE_STYLES",
    "above_zero",
    "add_filter_arguments",
    "add_page_arguments",
    "confirm",
    "event_ref",
    "events_table",
    "filter_from_args",
    "http_url",
    "list_page",
    "port",
    "positive_int",
    "positive_seconds",
    "print_json",
    "print_result",
    "workers_line",
]

STATE_STYLES = {
    "pending": None,
    "retrying": "yellow",
    "processed": "green",
    "skipped": "dim",
    "dead": "red",
}


def _time(text: str) -> datetime:
    try:
        return parse_time(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def http_url(text: str) -> str:
    """An argparse type: an http:// or https:// URL with a host."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - parsing the port is the check (it raises for a bad one)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"not an http(s) URL with a host: {text!r} (e.g. http://127.0.0.1:8000)"
        )
    return text


def above_zero(unit: str) -> Callable[[str], float]:
    """An argparse type: a number of ``unit`` above 0 (and finite)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"not a number of {unit} above 0: {text!r}")
        return value

    return parse


positive_seconds = above_zero("seconds")


def event_ref(text: str) -> str:
    """An argparse type: an event id, or ``SOURCE:KEY``."""
    source, sep, key = text.partition(":")
    if text.isdigit():
        positive_int(text)  # ids are bigint: a longer number is refused here, not by SQL
    elif not (sep and source and key):
        raise argparse.ArgumentTypeError(
            f"not an event: {text!r}; give its id (42) or SOURCE:KEY (stripe:evt_1),"
            " as `inbox events list` shows them"
        )
    return text


def add_filter_arguments(parser: argparse.ArgumentParser, *, states: bool = True) -> None:
    group = parser.add_argument_group("filters (each one given narrows the selection)")
    group.add_argument("--source", help="events of this source")
    group.add_argument("--type", help="event type glob, e.g. 'invoice.*'")
    if states:
        group.add_argument(
            "--state",
            action="append",
            choices=EVENT_STATES,
            help="pending, retrying, processed, skipped or dead (repeatable)",
        )
    group.add_argument(
        "--since", type=_time, help="received at or after: ISO 8601, or a duration ago (2h)"
    )
    group.add_argument("--until", type=_time, help="received before: ISO 8601, or 30m (ago)")
    group.add_argument("--key", help="the idempotency key (exact)")
    group.add_argument("--error", help="a substring of the last error (case-insensitive)")


def add_page_arguments(parser: argparse.ArgumentParser) -> None:
    """A listing's page (``--limit``, ``--before``, keyset) and ``--json``."""
    parser.add_argument(
        "--limit", type=positive_int, default=50, help="events per page (default 50)"
    )
    parser.add_argument("--before", type=positive_int, help="the page after this event id (keyset)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def list_page(
    args: argparse.Namespace, settings: Settings, selection: EventFilter, *, empty: str
) -> int:
    """Print the page of ``selection`` that ``add_page_arguments``' options ask for: a table
    (``empty`` when there is nothing) and how to get the next page, or ``--json``."""
    with database_url(settings, say=say, part="operator") as url:
        page = events(url, selection, limit=args.limit, before=args.before)
    if args.json:
        print_json(page.to_json())
        return 0
    print(events_table(page.events) if page.events else empty)
    if page.next_before is not None:
        print(f"more: --before {page.next_before}")
    return 0


def filter_from_args(args: argparse.Namespace, ids: Sequence[int] | None = None) -> EventFilter:
    states = getattr(args, "state", None)
    return EventFilter(
        ids=tuple(ids) if ids else None,
        source=args.source,
        type=args.type,
        states=tuple(states) if states else None,
        since=args.since,
        until=args.until,
        key=args.key,
        error=args.error,
    )


def events_table(rows: Sequence[EventSummary], *, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    colour = use_colour()
    cells: list[list[Cell]] = [
        [
            str(e.id),
            e.source,
            e.type or "-",
            e.key,
            (e.state, STATE_STYLES[e.state]),
            relative(e.received_at, now),
            str(e.attempts),
            str(e.deliveries),
            (e.last_error or "", "red" if e.state in ("dead", "retrying") else "dim"),
        ]
        for e in rows
    ]
    headers = ["ID", "SOURCE", "TYPE", "KEY", "STATE", "RECEIVED", "TRIES", "DELIV", "LAST ERROR"]
    return table(headers, cells, colour=colour, right=(0, 6, 7))


def confirm(question: str, *, assume_yes: bool) -> bool:
    """Ask on a terminal; without one, only ``--yes`` proceeds."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        raise RefusedError(
            f"{question} needs confirmation and stdin is not a terminal; pass --yes",
            action="confirm",
        )
    answer = input(f"{question} [y/N] ").strip().lower()
    return answer in ("y", "yes")


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


class _Record(Protocol):
    def to_json(self) -> dict[str, Any]: ...


RecordT = TypeVar("RecordT", bound=_Record)


def print_result(
    args: argparse.Namespace, record: RecordT, render: Callable[[RecordT], str]
) -> None:
    """With ``--json``, the record's documented JSON form (``to_json``); else
    ``render(record)``, for a person."""
    if args.json:
        print_json(record.to_json())
    else:
        print(render(record))


def workers_line(workers: Sequence[WorkerVersion]) -> str:
    """The running workers by version: "2 workers: 3f2a… since 10:02, 9c1b… since 09:15"."""
    if not workers:
        return "workers: none running"
    count = sum(w.processes for w in workers)
    each = ", ".join(
        f"{w.version} since {w.since.astimezone():%Y-%m-%d %H:%M}"
        + (f" ({w.processes} processes)" if w.processes > 1 else "")
        for w in workers
    )
    return f"{count} worker{'s' if count != 1 else ''}: {each}"
