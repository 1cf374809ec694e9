"""The operator's Python API: what the inbox holds and did, and retention.

Every function takes ``db``: a connection string (a connection is opened, committed and
closed) or an open ``psycopg.Connection`` (used as is; the caller commits). The CLI commands
``inbox status``, ``inbox events`` and ``inbox prune`` are thin layers over these::

    from inbox import queries
    st = queries.status("postgresql://…")
    page = queries.events(db, queries.EventFilter(source="stripe", states=("dead",)))
    detail = queries.event(db, "stripe:evt_1")
    queries.prune(db, older_than=queries.parse_duration("90d"))

Replays are the processing side's: ``processors.replay`` and ``processors.retry_dead``.
"""

from __future__ import annotations

import getpass
import re
import socket
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import structlog

from inbox._db import translate_driver_errors
from inbox._errors import EventNotFoundError, RefusedError
from inbox._operator_models import (
    Attempt,
    Delivery,
    EventDetail,
    EventFilter,
    EventPage,
    EventState,
    EventSummary,
    PruneResult,
    SourceStatus,
    Status,
    Via,
    WorkState,
    check_via,
)
from inbox._operator_store import LogStore
from inbox._receiver_scrape import receiver_rejections
from inbox._term import human_duration

__all__ = [
    "DEFAULT_MAX_AGE",
    "MINIMUM_RETENTION",
    "Attempt",
    "Delivery",
    "EventDetail",
    "EventFilter",
    "EventPage",
    "EventState",
    "EventSummary",
    "PruneResult",
    "SourceStatus",
    "Status",
    "WorkState",
    "connection",
    "current_actor",
    "event",
    "event_ids",
    "events",
    "parse_duration",
    "parse_time",
    "prune",
    "receiver_rejections",
    "status",
]

log = structlog.get_logger("inbox.queries")

DEFAULT_MAX_AGE = timedelta(minutes=5)
# Longer than any provider's retry window (Stripe retries for 3 days): a pruned key can be
# accepted again, so a key must be pruned only once no provider can deliver it any more.
MINIMUM_RETENTION = timedelta(days=7)

Db = str | psycopg.Connection[Any]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400, None: 1}


@contextmanager
def connection(db: Db, action: str = "query the inbox") -> Iterator[psycopg.Connection[Any]]:
    """A connection for one operation: the caller's, or a new one committed on success."""
    with translate_driver_errors(action):
        if not isinstance(db, str):
            yield db
            return
        with psycopg.connect(db, application_name="pg-inbox operator") as conn:
            yield conn  # psycopg commits on a clean exit, rolls back on an exception


def current_actor() -> str:
    """``user@host`` of this process: who a replay or prune is recorded as."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def parse_duration(text: str) -> timedelta:
    """``90d``, ``12h``, ``30m``, ``45s``, ``2w`` (a bare number is seconds)."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (try 90d, 12h, 30m, 45s or 2w)")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO 8601 time (UTC when it has no offset), or a duration meaning that long ago."""
    try:
        return (now or datetime.now(UTC)) - parse_duration(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (ISO 8601, or a duration ago like 2h)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def status(
    db: Db,
    *,
    max_age: timedelta = DEFAULT_MAX_AGE,
    sources: Sequence[str] = (),
    receiver_metrics: Sequence[str] = (),
) -> Status:
    """Counts per source, the oldest pending age, dead letters, throughput, worker sessions.

    ``problems`` (unhealthy: what ``inbox status`` exits 2 for) lists dead letters and live
    work that has waited longer than ``max_age`` since it became due. ``rejected`` comes from
    the receivers' ``/metrics`` at ``receiver_metrics`` (rejections are never stored).
    """
    warnings: list[str] = []
    rejected: dict[str, int] | None = None
    if receiver_metrics:
        rejected, unreachable = receiver_rejections(receiver_metrics)
        warnings += [f"receiver metrics unavailable: {u}" for u in unreachable]
    with connection(db, "read the inbox status") as conn:
        store = LogStore(conn)
        per_source = store.source_status(sources, rejected)
        processes, listeners, usage = store.sessions()
        now = conn.execute("select now()").fetchone()
    problems: list[str] = []
    dead = sum(s.dead for s in per_source)
    if dead:
        problems.append(f"{dead} dead letter{'s' if dead != 1 else ''}")
    ages = [s.oldest_pending_seconds for s in per_source if s.oldest_pending_seconds is not None]
    if ages and max(ages) > max_age.total_seconds():
        problems.append(
            f"oldest pending event waits {max(ages):.0f} s (over {max_age.total_seconds():g} s)"
        )
    if processes > listeners:
        warnings.append(
            f"{processes - listeners} of {processes} worker processes have no listener"
            " (poll only: listen = false, or the listener is reconnecting)"
        )
    if usage > 0.5:
        warnings.append(f"notification queue {usage:.0%} full: a listening session is stuck")
    return Status(
        generated_at=now[0] if now else datetime.now(UTC),
        sources=per_source,
        worker_processes=processes,
        listeners=listeners,
        notification_queue_usage=usage,
        max_age_seconds=max_age.total_seconds(),
        problems=problems,
        warnings=warnings,
    )


def events(
    db: Db, event_filter: EventFilter | None = None, *, limit: int = 50, before: int | None = None
) -> EventPage:
    """A page of events, newest first; pass ``page.next_before`` as ``before`` for the next."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    with connection(db, "list events") as conn:
        store = LogStore(conn)
        ids = store.select_ids(event_filter or EventFilter(), limit=limit + 1, before=before)
        more = len(ids) > limit
        page = store.summaries(ids[:limit])
    return EventPage(events=page, next_before=page[-1].id if more and page else None)


def event_ids(db: Db, event_filter: EventFilter) -> list[int]:
    """Every id the filter selects, oldest first (what a replay enqueues)."""
    with connection(db, "select events") as conn:
        ids = LogStore(conn).select_ids(event_filter, limit=None)
    ids.reverse()
    return ids


def event(db: Db, ref: int | str, *, redact: Collection[str] = ()) -> EventDetail:
    """One event with its deliveries and attempts; ``ref`` is an id or ``"SOURCE:KEY"``.

    Header values named in ``redact`` (case-insensitive) are shown as ``[redacted]``.
    """
    with connection(db, "read an event") as conn:
        store = LogStore(conn)
        if isinstance(ref, int) or ref.isdigit():
            row = store.find(event_id=int(ref))
        else:
            source, sep, key = ref.partition(":")
            if not sep or not source or not key:
                raise ValueError(f"an event is an id or SOURCE:KEY, got {ref!r}")
            row = store.find(source_key=(source, key))
        if row is None:
            raise EventNotFoundError(f"no event {ref!r} (pruned, or never received)", ref=ref)
        return store.detail(row, redact)


def prune(
    db: Db,
    older_than: timedelta,
    *,
    minimum: timedelta = MINIMUM_RETENTION,
    dry_run: bool = False,
    actor: str | None = None,
    via: Via = "api",
) -> PruneResult:
    """Remove events received more than ``older_than`` ago, with their deliveries and
    attempts, through the audited retention path. Events with work left (pending, retrying
    or dead) are kept. Refuses an ``older_than`` below ``minimum``: a pruned key can be
    accepted again, so a provider's late retry would run twice. ``actor`` (default:
    ``user@host`` of this process) and ``via`` are recorded in the audit.
    """
    check_via(via)
    if older_than < minimum:
        raise RefusedError(
            "refusing to prune events younger than the minimum retention of"
            f" {human_duration(minimum.total_seconds())} (asked for"
            f" {human_duration(older_than.total_seconds())}): a pruned key can be accepted"
            " again, so a provider's late retry would be processed twice. Prune older events.",
            action="prune",
        )
    with connection(db, "prune the inbox") as conn:
        store = LogStore(conn)
        [(now,)] = conn.execute("select now()").fetchall()
        cutoff = now - older_than
        if dry_run:
            deletable, kept = store.prune_preview(cutoff)
            return PruneResult(cutoff, True, deletable, kept)
        with conn.transaction():
            result = store.prune(cutoff, older_than.total_seconds(), actor or current_actor(), via)
    log.info(
        "inbox_pruned",
        cutoff=cutoff.isoformat(),
        events=result.events_deleted,
        kept=result.events_kept,
        audit_id=result.audit_id,
    )
    return result
