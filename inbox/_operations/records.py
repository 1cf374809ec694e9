"""The operator's records of runs and time: replay runs, their progress, the audit, the
activity series; and what every record shares (JSON form, page cursors, ``via``).
``inbox._operations.models`` re-exports them with the event records."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

__all__ = [
    "VIA",
    "Activity",
    "ActivityPoint",
    "AuditEntry",
    "AuditKind",
    "AuditPage",
    "ReplayProgress",
    "ReplayRun",
    "Via",
    "check_via",
    "decode_cursor",
    "encode_cursor",
    "jsonable",
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


def decode_cursor(token: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The position in a token from :func:`encode_cursor`; ``ValueError`` when it is not one
    (a page token is user input: it arrives in a URL)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        position = json.loads(raw)
    except (binascii.Error, ValueError):
        position = None
    if not isinstance(position, dict) or set(position) != set(keys):
        raise ValueError(f"not a page cursor: {token[:40]!r} (start again from the first page)")
    return position


def jsonable(value: Any) -> Any:
    """Datetimes as ISO 8601, timedeltas as seconds, bytes as hex; the rest as is."""
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


@dataclass(frozen=True, slots=True)
class ReplayRun:
    """One replay run or dead-letter retry (kind ``dead-retry``), as recorded."""

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

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class ActivityPoint:
    at: datetime
    """The bucket's start; it spans one step."""
    received: int
    processed: int
    """Attempts that settled the event (processed, or skipped: no handler)."""
    failed: int
    """Attempts that raised or crashed (a handler's ``Retry`` is not a failure)."""

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class Activity:
    """Counts per bucket over a window, oldest first; the last bucket holds now."""

    window: timedelta
    step: timedelta
    points: list[ActivityPoint]

    def to_json(self) -> dict[str, Any]:
        return {
            "window_seconds": self.window.total_seconds(),
            "step_seconds": self.step.total_seconds(),
            "points": [p.to_json() for p in self.points],
        }


@dataclass(frozen=True, slots=True)
class ReplayProgress:
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

    @property
    def finished(self) -> bool:
        return self.pending == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run.to_json(),
            "processed": self.processed,
            "failed": self.failed,
            "pending": self.pending,
            "retrying": self.retrying,
            "attempts": self.attempts,
            "finished": self.finished,
        }


AuditKind = Literal["replay", "dead-retry", "dead-skip", "prune"]


@dataclass(frozen=True, slots=True)
class AuditEntry:
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

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class AuditPage:
    entries: list[AuditEntry]
    next_cursor: str | None
    """Pass as ``cursor`` for the next (older) page; None on the last page."""

    def to_json(self) -> dict[str, Any]:
        return {"entries": [e.to_json() for e in self.entries], "next_cursor": self.next_cursor}
