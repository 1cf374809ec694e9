"""What the operator's queries return about events: plain, frozen records with a stable
JSON form (``inbox._operations.records``' ``Record``).

``to_json()`` is the documented ``--json`` output of the CLI (docs/operations.md): keys are
only ever added, never renamed or removed. What selects events is
``inbox._operations.selection``; the records of runs and time are ``records``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from inbox._operations.records import (
    Record,
    ReplayRun,
    WorkerVersion,
    encode_cursor,
    jsonable,
    record_json,
)
from inbox._operations.selection import EventState

__all__ = [
    "Attempt",
    "Delivery",
    "EventDetail",
    "EventPage",
    "EventSummary",
    "HeldKey",
    "PruneResult",
    "PrunedPartition",
    "SourceStatus",
    "Status",
    "WorkState",
]


@dataclass(frozen=True, slots=True)
class EventSummary(Record):
    """One event in a listing (``queries.events``, ``queries.dead``): its identity, its
    state and its latest attempt; ``queries.event`` has the rest."""

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


@dataclass(frozen=True, slots=True)
class EventPage(Record):
    """A page of a listing, newest first."""

    events: list[EventSummary]
    next_before: int | None
    """Pass as ``before`` for the next page; None on the last page."""

    _json_extra = ("next_cursor",)

    @property
    def next_cursor(self) -> str | None:
        """The same position as an opaque token (``cursor=`` of ``queries.events``): what a
        URL carries, so the paging key can change without breaking saved links' meaning."""
        return None if self.next_before is None else encode_cursor({"before": self.next_before})


@dataclass(frozen=True, slots=True)
class Delivery(Record):
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
        """The ``--json`` form: the body, when it differs, as ``body_base64``."""
        # The body as base64, not hex (the other bytes' form): it is what a reader decodes.
        body = None if self.body is None else base64.b64encode(self.body).decode()
        return {
            **record_json(self, ("id", "received_at", "body_sha256", "differs")),
            "body_base64": body,
        }


@dataclass(frozen=True, slots=True)
class Attempt(Record):
    """One run of a handler on the event (``inbox_attempts``), as recorded."""

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
    version: str | None = None
    """The version of the code that ran it (None: recorded before versions were)."""

    @property
    def duration(self) -> timedelta:
        """How long the attempt ran."""
        return self.finished_at - self.started_at

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: the fields, then ``duration_seconds``."""
        return {**record_json(self), "duration_seconds": self.duration.total_seconds()}


@dataclass(frozen=True, slots=True)
class WorkState(Record):
    """The event's row in the queue, while it has one."""

    state: str
    attempts: int
    run_at: datetime
    enqueued_at: datetime
    last_error: str | None
    replay_id: int | None
    priority: int


# The JSON form's order (docs/operations.md): the event's identity before its bodies.
_DETAIL_FIELDS = (
    "id",
    "source",
    "key",
    "type",
    "verifier",
    "received_at",
    "state",
    "headers",
    "body_sha256",
    "trace_id",
)


@dataclass(frozen=True, slots=True)
class EventDetail(Record):
    """One event whole (``queries.event``): its body and headers, its work, every delivery
    of its key, every attempt, and the replay runs that included it."""

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
        """The body decoded as UTF-8, or None when it is not UTF-8."""
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: the event's identity, then its body (its size, and as JSON,
        text and base64), its work, deliveries, attempts and replays."""
        return {
            **record_json(self, _DETAIL_FIELDS),
            "body_size": len(self.body),
            "body_json": self.body_json(),
            "body_text": self.body_text(),
            "body_base64": base64.b64encode(self.body).decode(),
            "work": jsonable(self.work),
            "delivery_count": len(self.deliveries),
            **record_json(self, ("deliveries", "attempts", "replays")),
        }


@dataclass(frozen=True, slots=True)
class HeldKey(Record):
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

    _json_extra = ("reason",)

    @property
    def reason(self) -> str:
        """Why the key is held: ``dead letter`` or ``retrying``."""
        return "dead letter" if self.state == "dead" else "retrying"


@dataclass(frozen=True, slots=True)
class SourceStatus(Record):
    """One source's line of a ``Status``: what it received, and where its events are."""

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


# The JSON form's order (docs/operations.md): the verdict first, the workers last.
_STATUS_FIELDS = (
    "generated_at",
    "healthy",
    "problems",
    "warnings",
    "max_age_seconds",
    "dead",
    "oldest_pending_seconds",
    "sources",
    "held",
    "held_keys",
)


@dataclass(frozen=True, slots=True)
class Status(Record):
    """The inbox at a glance (``queries.status``, ``inbox status``): per source, the
    workers, and whether it is healthy."""

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
    worker_versions: list[WorkerVersion] = field(default_factory=list)
    """The running worker processes by the version of the code they run, newest first."""

    @property
    def healthy(self) -> bool:
        """No problems (``inbox status`` exits 2 when there are)."""
        return not self.problems

    @property
    def dead(self) -> int:
        """Dead letters, all sources together."""
        return sum(s.dead for s in self.sources)

    @property
    def oldest_pending_seconds(self) -> float | None:
        """The longest any source's due work has waited (None: none waits)."""
        ages = [s.oldest_pending_seconds for s in self.sources]
        known = [a for a in ages if a is not None]
        return max(known) if known else None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: the verdict first, the sources, then the workers."""
        return {
            **record_json(self, _STATUS_FIELDS),
            "workers": {
                "processes": self.worker_processes,
                "listeners": self.listeners,
                "notification_queue_usage": self.notification_queue_usage,
                "versions": [v.to_json() for v in self.worker_versions],
            },
        }


@dataclass(frozen=True, slots=True)
class PrunedPartition(Record):
    """A partition of the log a prune dropped (or, kept, why not)."""

    partition: str
    start: datetime | None
    """Where its period starts (None: the first partition, from before partitions)."""
    end: datetime
    events: int | None = None
    """Its events (the partition's statistics), when dropped or droppable."""
    unsettled: int | None = None
    """Kept: how many of its events still have work (pending, retrying or dead)."""
    busy: bool = False
    """Kept: a query held it past the prune's lock wait; the next prune takes it."""

    @classmethod
    def of(cls, raw: dict[str, Any]) -> PrunedPartition:
        start = None if raw["from"] == "-infinity" else datetime.fromisoformat(raw["from"])
        return cls(
            partition=raw["partition"],
            start=start,
            end=datetime.fromisoformat(raw["to"]),
            events=raw.get("events"),
            unsettled=raw.get("unsettled"),
            busy=bool(raw.get("busy", False)),
        )


@dataclass(frozen=True, slots=True)
class PruneResult(Record):
    """What a prune removed (``queries.prune``), or with ``dry_run`` would remove."""

    cutoff: datetime
    dry_run: bool
    events_deleted: int
    """With ``dry_run``: how many would be (the partitions' statistics)."""
    events_kept: int
    """In partitions older than the cutoff that were kept: events that still have work
    (pending, retrying or dead), which keep their whole partition."""
    deliveries_deleted: int = 0
    attempts_deleted: int = 0
    audit_id: int | None = None
    partitions_dropped: list[PrunedPartition] = field(default_factory=list)
    """Whole partitions (of the log, its attempts and that period's deliveries) removed,
    with dry_run: that would be."""
    partitions_kept: list[PrunedPartition] = field(default_factory=list)
    """Partitions older than the cutoff kept whole, with why."""
    keys_deleted: int = 0
    """Keys removed under ``[retention] keys_days`` (none by default: dedupe is permanent)."""
