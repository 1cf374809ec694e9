"""What the operator's queries return: plain, frozen records with a stable JSON form.

``to_json()`` is the documented ``--json`` output of the CLI (docs/operations.md): keys are
only ever added, never renamed or removed.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any, Literal

from inbox._operations.records import (
    Activity,
    ActivityPoint,
    AuditEntry,
    AuditKind,
    AuditPage,
    ReplayProgress,
    ReplayRun,
    Via,
    check_via,
    decode_cursor,
    encode_cursor,
    jsonable,
)

__all__ = [
    "Activity",
    "ActivityPoint",
    "Attempt",
    "AuditEntry",
    "AuditKind",
    "AuditPage",
    "Delivery",
    "EventDetail",
    "EventFilter",
    "EventPage",
    "EventState",
    "EventSummary",
    "FilterState",
    "HeldKey",
    "PruneResult",
    "ReplayProgress",
    "ReplayRun",
    "SourceStatus",
    "Status",
    "Via",
    "WorkState",
    "check_via",
    "decode_cursor",
    "encode_cursor",
    "glob_to_like",
    "jsonable",
]

EventState = Literal["pending", "retrying", "processed", "skipped", "dead"]
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


@dataclass(frozen=True, slots=True)
class EventSummary:
    id: int
    source: str
    key: str
    type: str | None
    received_at: datetime
    size: int
    state: EventState
    attempts: int
    deliveries: int
    last_error: str | None
    last_attempt_at: datetime | None
    next_run_at: datetime | None
    queued_replay_id: int | None

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class EventPage:
    events: list[EventSummary]
    next_before: int | None
    """Pass as ``before`` for the next page; None on the last page."""

    @property
    def next_cursor(self) -> str | None:
        """The same position as an opaque token (``cursor=`` of ``queries.events``): what a
        URL carries, so the paging key can change without breaking saved links' meaning."""
        return None if self.next_before is None else encode_cursor({"before": self.next_before})

    def to_json(self) -> dict[str, Any]:
        return {
            "events": [e.to_json() for e in self.events],
            "next_before": self.next_before,
            "next_cursor": self.next_cursor,
        }


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery of the event's key. The first is the event itself."""

    received_at: datetime
    body_sha256: bytes
    differs: bool
    """The body differs from the stored event's (then ``body`` holds it)."""
    body: bytes | None
    id: int | None = None
    """The repeat's id in ``inbox_deliveries`` (None for the first delivery, the event
    itself): what ``queries.delivery_body`` takes."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "received_at": jsonable(self.received_at),
            "body_sha256": self.body_sha256.hex(),
            "differs": self.differs,
            "body_base64": None if self.body is None else base64.b64encode(self.body).decode(),
        }


@dataclass(frozen=True, slots=True)
class Attempt:
    attempt: int
    started_at: datetime
    finished_at: datetime
    outcome: str
    handler: str | None
    worker: str | None
    error_class: str | None
    error_message: str | None
    replay_id: int | None
    replay_reason: str | None
    error_traceback: str | None = None
    """The handler's traceback when the attempt raised (bounded, migration 0004)."""
    sequence: int = 0
    """The attempt's place in the event's whole history (1, 2, ...); ``attempt`` counts
    within its run, the live one or a replay (``replay_id``), and restarts with each."""

    @property
    def duration(self) -> timedelta:
        return self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        out = {k: jsonable(v) for k, v in asdict(self).items()}
        out["duration_seconds"] = self.duration.total_seconds()
        return out


@dataclass(frozen=True, slots=True)
class WorkState:
    """The event's row in the queue, while it has one."""

    state: str
    attempts: int
    run_at: datetime
    enqueued_at: datetime
    last_error: str | None
    replay_id: int | None
    priority: int

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class EventDetail:
    id: int
    source: str
    key: str
    type: str | None
    verifier: str | None
    received_at: datetime
    headers: dict[str, str]
    """As stored, with the configured redactions applied again on display."""
    body: bytes
    body_sha256: bytes
    state: EventState
    work: WorkState | None
    deliveries: list[Delivery] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    replays: list[ReplayRun] = field(default_factory=list)
    """The replay runs and dead-letter retries that included the event, newest first."""
    trace_id: str | None = None
    """The trace of the event's receipt (docs/observability.md), when it was traced."""

    def body_json(self) -> Any | None:
        """The body parsed as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def body_text(self) -> str | None:
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "key": self.key,
            "type": self.type,
            "verifier": self.verifier,
            "received_at": jsonable(self.received_at),
            "state": self.state,
            "headers": self.headers,
            "body_sha256": self.body_sha256.hex(),
            "trace_id": self.trace_id,
            "body_size": len(self.body),
            "body_json": self.body_json(),
            "body_text": self.body_text(),
            "body_base64": base64.b64encode(self.body).decode(),
            "work": None if self.work is None else self.work.to_json(),
            "delivery_count": len(self.deliveries),
            "deliveries": [d.to_json() for d in self.deliveries],
            "attempts": [a.to_json() for a in self.attempts],
            "replays": [r.to_json() for r in self.replays],
        }


@dataclass(frozen=True, slots=True)
class HeldKey:
    """An ordered key whose head holds its other events back (docs/ordering.md)."""

    source: str
    ordering_key: str
    head_event_id: int
    state: str
    """``dead`` (held until an operator retries or skips it) or ``pending`` (retrying)."""
    attempts: int
    last_error: str | None
    run_at: datetime
    """When a retrying head runs again."""
    waiting: int
    """Events of the key waiting behind the head."""

    @property
    def reason(self) -> str:
        return "dead letter" if self.state == "dead" else "retrying"

    def to_json(self) -> dict[str, Any]:
        return {**{k: jsonable(v) for k, v in asdict(self).items()}, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SourceStatus:
    source: str
    received_1h: int
    received_24h: int
    duplicates_1h: int
    duplicates_24h: int
    rejected: int | None
    """Rejections counted by the receivers whose metrics were read (since each started);
    None when none was read: the receiver keeps them in memory, not in the database."""
    pending: int
    retrying: int
    dead: int
    replay_queued: int
    oldest_pending_seconds: float | None
    processed_per_minute: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Status:
    generated_at: datetime
    sources: list[SourceStatus]
    worker_processes: int
    listeners: int
    notification_queue_usage: float
    max_age_seconds: float
    problems: list[str]
    """Why the inbox is unhealthy (dead letters, a pending event older than max_age)."""
    warnings: list[str] = field(default_factory=list)
    """Worth a look, not unhealthy: a receiver whose metrics could not be read, a worker
    process without its listener."""
    held_keys: list[HeldKey] = field(default_factory=list)
    """Ordered keys held by their head (the first ``HELD_SHOWN``)."""
    held: int = 0
    """How many keys are held in all."""

    @property
    def healthy(self) -> bool:
        return not self.problems

    @property
    def dead(self) -> int:
        return sum(s.dead for s in self.sources)

    @property
    def oldest_pending_seconds(self) -> float | None:
        ages = [s.oldest_pending_seconds for s in self.sources]
        known = [a for a in ages if a is not None]
        return max(known) if known else None

    def to_json(self) -> dict[str, Any]:
        return {
            "generated_at": jsonable(self.generated_at),
            "healthy": self.healthy,
            "problems": self.problems,
            "warnings": self.warnings,
            "max_age_seconds": self.max_age_seconds,
            "dead": self.dead,
            "oldest_pending_seconds": self.oldest_pending_seconds,
            "sources": [s.to_json() for s in self.sources],
            "held": self.held,
            "held_keys": [h.to_json() for h in self.held_keys],
            "workers": {
                "processes": self.worker_processes,
                "listeners": self.listeners,
                "notification_queue_usage": self.notification_queue_usage,
            },
        }


@dataclass(frozen=True, slots=True)
class PruneResult:
    cutoff: datetime
    dry_run: bool
    events_deleted: int
    """With ``dry_run``: how many would be."""
    events_kept: int
    """Older than the cutoff but kept: they still have work (pending, retrying or dead)."""
    deliveries_deleted: int = 0
    attempts_deleted: int = 0
    audit_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: jsonable(v) for k, v in asdict(self).items()}
