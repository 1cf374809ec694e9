"""The operator's records of runs and time: replay runs, their progress, the audit, the
activity series; and what every record shares (``Record``: the JSON form; page cursors;
``via``). The event records are ``inbox._operations.models``."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

__all__ = [
    "VIA",
    "Activity",
    "ActivityPoint",
    "AuditEntry",
    "AuditKind",
    "AuditPage",
    "Record",
    "ReplayProgress",
    "ReplayRun",
    "Via",
    "WorkerVersion",
    "check_via",
    "cursor_int",
    "cursor_time",
    "decode_cursor",
    "encode_cursor",
    "jsonable",
    "record_json",
]

Via = Literal["cli", "console", "api"]
"""Where an audited action (replay, retry, prune) was started from: recorded with it, so
its actor reads right (``user@host`` from the CLI and the API, a user's name from the
console)."""
VIA: tuple[Via, ...] = ("cli", "console", "api")


def check_via(via: str) -> None:
    if via not in VIA:
        raise ValueError(f"via must be one of {', '.join(VIA)}, got {via!r}")


def encode_cursor(position: dict[str, Any]) -> str:
    """An opaque, URL-safe page token for a keyset position."""
    raw = json.dumps(jsonable(position), separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _not_a_cursor(token: str) -> ValueError:
    return ValueError(f"not a page cursor: {token[:40]!r} (start again from the first page)")


def decode_cursor(token: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The position in a token from :func:`encode_cursor`; ``ValueError`` when it is not one
    (a page token is user input: it arrives in a URL)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        position = json.loads(raw)
    except (binascii.Error, ValueError):
        position = None
    if not isinstance(position, dict) or set(position) != set(keys):
        raise _not_a_cursor(token)
    return position


def cursor_int(position: dict[str, Any], name: str, token: str) -> int:
    """The whole number at ``name`` of a decoded position (``ValueError`` as a bad token)."""
    value = position[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise _not_a_cursor(token)
    return value


def cursor_time(position: dict[str, Any], name: str, token: str) -> datetime:
    """The time at ``name`` of a decoded position (``ValueError`` as a bad token)."""
    try:
        return datetime.fromisoformat(str(position[name]))
    except ValueError:
        raise _not_a_cursor(token) from None


def jsonable(value: Any) -> Any:
    """Records as their ``to_json``, datetimes as ISO 8601, timedeltas as seconds, bytes as
    hex, containers item by item; the rest as is."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def record_json(record: Record, names: Iterable[str] | None = None) -> dict[str, Any]:
    """``{name: jsonable(record.name)}`` for each of ``names`` (a field or a property), in
    their order; by default the record's fields, in theirs."""
    if names is None:
        names = (f.name for f in fields(record))  # type: ignore[arg-type]  # a dataclass
    return {name: jsonable(getattr(record, name)) for name in names}


class Record:
    """A frozen record of the operator API (a dataclass). ``to_json`` is its documented
    ``--json`` form: by default each field under its own name, as ``jsonable`` writes it,
    then the properties named in ``_json_extra``; a record whose form orders or shapes keys
    otherwise builds its own on ``record_json``."""

    __slots__ = ()
    # Properties the form adds after the fields: what the record concludes from them.
    _json_extra: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> dict[str, Any]:
        """The record's ``--json`` form: datetimes as ISO 8601, durations in seconds, bytes
        as hex (docs/operations.md). Keys are only ever added, never renamed or removed."""
        return {**record_json(self), **record_json(self, self._json_extra)}


@dataclass(frozen=True, slots=True)
class ReplayRun(Record):
    """One replay run, dead-letter retry (kind ``dead-retry``) or skip (``dead-skip``), or
    rehearsal (``rehearsal``: it queued nothing), as recorded."""

    id: int
    kind: str
    created_at: datetime
    created_by: str
    reason: str
    filter: dict[str, Any]
    selected: int
    queued: int
    rate_per_second: float | None
    via: Via = "api"
    required_version: str | None = None
    """Only a worker running this version of the code runs the run's events."""
    outcome: dict[str, int] | None = None
    """A rehearsal's events by what they would do (succeeded, failed, retry, skipped);
    None for the other kinds."""


@dataclass(frozen=True, slots=True)
class WorkerVersion(Record):
    """Worker processes running one version of the code (``inbox_workers``)."""

    version: str
    processes: int
    since: datetime
    """When the first of them started."""


@dataclass(frozen=True, slots=True)
class ActivityPoint(Record):
    """One bucket of an ``Activity``: what arrived and what ran in it."""

    at: datetime
    """The bucket's start; it spans one step."""
    received: int
    processed: int
    """Attempts that settled the event (processed, or skipped: no handler)."""
    failed: int
    """Attempts that raised or crashed (a handler's ``Retry`` is not a failure)."""


@dataclass(frozen=True, slots=True)
class Activity(Record):
    """Counts per bucket over a window, oldest first; the last bucket holds now."""

    window: timedelta
    step: timedelta
    points: list[ActivityPoint]

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: the window and step in seconds, then the points."""
        return {
            "window_seconds": self.window.total_seconds(),
            "step_seconds": self.step.total_seconds(),
            "points": [p.to_json() for p in self.points],
        }


@dataclass(frozen=True, slots=True)
class ReplayProgress(Record):
    """Where the events of one run are now."""

    run: ReplayRun
    processed: int
    """Settled under this run."""
    failed: int
    """Dead again under this run (or taken over by a later run after failing here)."""
    pending: int
    """Still queued (``retrying`` of them have failed at least once)."""
    retrying: int
    attempts: int
    """Attempts made under this run so far."""

    _json_extra = ("finished",)

    @property
    def finished(self) -> bool:
        return self.pending == 0


AuditKind = Literal["replay", "dead-retry", "dead-skip", "rehearsal", "prune"]


@dataclass(frozen=True, slots=True)
class AuditEntry(Record):
    """One operator action: a replay run, a dead-letter retry or skip, or a prune."""

    kind: AuditKind
    id: int
    """The run's id (``inbox_replays``) or the prune's (``inbox_prunes``): unique per kind."""
    created_at: datetime
    created_by: str
    via: Via
    reason: str | None
    """Why (replays and retries; a prune's reason is its retention period)."""
    filter: dict[str, Any]
    """What it selected: a replay's event filter; a prune's cutoff and retention."""
    selected: int | None
    """Events the run selected (None for a prune)."""
    count: int
    """Events queued by the run, or deleted by the prune."""


@dataclass(frozen=True, slots=True)
class AuditPage(Record):
    """A page of the audit (``queries.audit``), newest first."""

    entries: list[AuditEntry]
    next_cursor: str | None
    """Pass as ``cursor`` for the next (older) page; None on the last page."""
