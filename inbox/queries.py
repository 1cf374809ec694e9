"""The operator's Python API: what the inbox holds and did, replays, and retention.

The CLI and the web console both call these, and only these: there is one copy of every
operator query. Every function takes ``db``: a connection string (a connection is opened,
committed and closed) or an open ``psycopg.Connection`` (used as is; the caller commits).
They are synchronous; the console runs them in a worker thread (``anyio.to_thread``) over
connections from a pool:

    from inbox import queries
    st = queries.status("postgresql://…")               # overview: per source, workers
    series = queries.activity(db, queries.LAST_HOUR)    # or LAST_DAY: charts
    page = queries.events(db, queries.EventFilter(source="stripe", type="invoice.*",
                                                  repeats=True), limit=50)
    page = queries.events(db, same_filter, cursor=page.next_cursor)   # the next page
    found = queries.search(db, "evt_123")    # an id, SOURCE:KEY, or a key in any source
    detail = queries.event(db, "stripe:evt_1")  # deliveries, attempts, replays that had it
    queries.delivery_body(db, detail.id, detail.deliveries[1].id)  # a repeat's bytes
    dead = queries.dead(db, queries.EventFilter(source="stripe"))   # dead letters
    queries.prune(db, older_than=queries.parse_duration("90d"), actor="olga", via="console")
    queries.replay_progress(db, run_id)      # processed / failed / pending of one run
    queries.audit(db, limit=50, cursor=None)  # replays, retries, prunes, newest first

Replays and dead-letter retries are here too, and only here: ``queries.replay``,
``queries.retry_dead`` (``ids=`` picks dead letters), ``queries.replay_runs`` (implemented in
``inbox._operations.replay``). They take ``actor=`` and ``via=`` (``"cli"``, ``"console"`` or
``"api"``, the default), recorded in the audit; a preview (``dry_run=True``) says how many of
the selected events are ``already_processed``:

    queries.replay(db, reason="fix #412", event_filter=f, actor="olga", via="console")
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from inbox._core.errors import EventNotFoundError, ReplayNotFoundError
from inbox._core.logs import get_logger
from inbox._operations.inputs import MAX_PAGE, check_limit, parse_duration, parse_time
from inbox._operations.models import (
    Attempt,
    Delivery,
    EventDetail,
    EventPage,
    EventSummary,
    HeldKey,
    PruneResult,
    SourceStatus,
    Status,
    WorkState,
)
from inbox._operations.receiver_scrape import receiver_rejections
from inbox._operations.records import (
    Activity,
    ActivityPoint,
    AuditEntry,
    AuditPage,
    ReplayProgress,
    ReplayRun,
    Via,
    cursor_int,
    cursor_time,
    decode_cursor,
    encode_cursor,
)
from inbox._operations.replay import (
    ReplayResult,
    SkipResult,
    event_ids,
    replay,
    replay_runs,
    retry_dead,
    skip_dead,
)
from inbox._operations.retention import MINIMUM_RETENTION, prune
from inbox._operations.selection import EventFilter, EventState, FilterState
from inbox._operations.session import Db, connection, current_actor
from inbox._operations.store import LogStore

__all__ = [
    "DEFAULT_MAX_AGE",
    "LAST_DAY",
    "LAST_HOUR",
    "MAX_PAGE",
    "MINIMUM_RETENTION",
    "Activity",
    "ActivityPoint",
    "Attempt",
    "AuditEntry",
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
    "ReplayResult",
    "ReplayRun",
    "SkipResult",
    "SourceStatus",
    "Status",
    "Via",
    "WorkState",
    "activity",
    "audit",
    "connection",
    "current_actor",
    "dead",
    "delivery_body",
    "event",
    "event_ids",
    "events",
    "held_keys",
    "parse_duration",
    "parse_time",
    "prune",
    "receiver_rejections",
    "replay",
    "replay_progress",
    "replay_runs",
    "retry_dead",
    "search",
    "skip_dead",
    "status",
]

log = get_logger("inbox.queries")

DEFAULT_MAX_AGE = timedelta(minutes=5)
"""How long due work may wait before ``status`` calls it a problem (``max_age``)."""

# Held keys listed in a status (all of them are counted).
HELD_SHOWN = 10

LAST_HOUR = (timedelta(hours=1), timedelta(minutes=1))
"""An hour by the minute: a ``window`` for ``activity`` (its default)."""
LAST_DAY = (timedelta(hours=24), timedelta(minutes=15))
"""A day by the quarter hour: a ``window`` for ``activity``."""
_MAX_BUCKETS = 1440


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
        versions = store.running_workers()
        held_keys, held = store.held_keys(HELD_SHOWN)
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
    if processes == 0:
        warnings.append(
            "no worker process can be seen: none runs, or none has said so for 30 s;"
            " events are received but not processed"
        )
    elif processes > listeners:
        warnings.append(
            f"{processes - listeners} of {processes} worker processes have no listener"
            " (they poll: listen = false, a pooled URL without [database] listen_url, or"
            " the listener is reconnecting)"
        )
    if len(versions) > 1:
        running = ", ".join(f"{v.version} ({v.processes})" for v in versions)
        warnings.append(
            f"workers run {len(versions)} versions of the code: {running}; a replay runs on"
            " any of them unless it requires one (--require-version)"
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
        held_keys=held_keys,
        held=held,
        worker_versions=versions,
    )


def held_keys(db: Db, *, limit: int = 100) -> list[HeldKey]:
    """Ordered keys whose head holds the key's other events back: a dead letter of a source
    with ``on_dead = "hold"`` (until it is retried or skipped), or a failed event waiting
    for its retry with events behind it. Dead letters first, then by event id."""
    check_limit(limit)
    with connection(db, "list held keys") as conn:
        return LogStore(conn).held_keys(limit)[0]


def events(
    db: Db,
    event_filter: EventFilter | None = None,
    *,
    limit: int = 50,
    before: int | None = None,
    cursor: str | None = None,
) -> EventPage:
    """A page of events, newest first (keyset paging: a deep page costs what the first does).

    For the next page pass ``page.next_cursor`` as ``cursor`` (an opaque token, what a URL
    carries) or ``page.next_before`` as ``before`` (the last id shown; the CLI's form).
    A malformed cursor is a ``ValueError``.
    """
    check_limit(limit)
    if cursor is not None:
        if before is not None:
            raise ValueError("pass either cursor or before, not both")
        before = cursor_int(decode_cursor(cursor, ("before",)), "before", cursor)
    with connection(db, "list events") as conn:
        store = LogStore(conn)
        ids = store.select_ids(event_filter or EventFilter(), limit=limit + 1, before=before)
        more = len(ids) > limit
        page = store.summaries(ids[:limit])
    return EventPage(events=page, next_before=page[-1].id if more and page else None)


def dead(
    db: Db,
    event_filter: EventFilter | None = None,
    *,
    limit: int = 50,
    cursor: str | None = None,
) -> EventPage:
    """A page of dead letters (the filter narrows them), newest first; retry the chosen ones
    with ``retry_dead(db, ids=..., reason=...)``."""
    dead_only = replace(event_filter or EventFilter(), states=("dead",))
    return events(db, dead_only, limit=limit, cursor=cursor)


def search(db: Db, text: str, *, limit: int = 50) -> list[EventSummary]:
    """Events matching an operator's search, newest first.

    ``text`` is an event id, ``SOURCE:KEY``, or a provider's key alone, which may match in
    several sources ("the provider says it delivered evt_123 four times"). Every reading of
    the text is tried: ``123`` finds event 123 and the key ``123`` in any source;
    ``stripe:evt_1`` finds that key in the ``stripe`` source and the key ``stripe:evt_1``.
    """
    check_limit(limit)
    needle = text.strip()
    if not needle:
        raise ValueError("search for an event id, SOURCE:KEY, or a provider key")
    source, sep, key = needle.partition(":")
    source_key = (source, key) if sep and source and key else None
    event_id = int(needle) if needle.isdigit() and len(needle) <= 18 else None
    with connection(db, "search events") as conn:
        store = LogStore(conn)
        ids = store.search(event_id=event_id, source_key=source_key, key=needle, limit=limit)
        return store.summaries(ids)


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


def delivery_body(db: Db, event_id: int, delivery_id: int) -> bytes:
    """The exact bytes of one repeat delivery of an event (``Delivery.id``)."""
    with connection(db, "read a delivery") as conn:
        body = LogStore(conn).delivery_body(event_id, delivery_id)
    if body is None:
        raise EventNotFoundError(
            f"event {event_id} has no delivery {delivery_id}", ref=f"{event_id}/{delivery_id}"
        )
    return body


def activity(db: Db, window: tuple[timedelta, timedelta] = LAST_HOUR) -> Activity:
    """Received, processed and failed per step over the window, e.g. ``LAST_HOUR`` (per
    minute) or ``LAST_DAY`` (per 15 minutes): ``(window, step)``."""
    span, step = window
    if step <= timedelta(0) or span < step:
        raise ValueError("activity needs a positive step no longer than its window")
    if span / step > _MAX_BUCKETS:
        raise ValueError(f"activity has at most {_MAX_BUCKETS} buckets; take a longer step")
    with connection(db, "read the activity") as conn:
        return LogStore(conn).activity(span, step)


def replay_progress(db: Db, replay_id: int) -> ReplayProgress:
    """Where the events of one replay run (or dead-letter retry) are now: processed,
    failed, still pending."""
    with connection(db, "read a replay run") as conn:
        store = LogStore(conn)
        run = store.replay_run(replay_id)
        if run is None:
            raise ReplayNotFoundError(f"no replay run {replay_id}", replay_id=replay_id)
        return store.replay_progress(run)


def audit(db: Db, *, limit: int = 50, cursor: str | None = None) -> AuditPage:
    """Replay runs, dead-letter retries and prunes, newest first: who, when, why, via
    where, what they selected and how many. Pass ``page.next_cursor`` for older ones."""
    check_limit(limit)
    position = None
    if cursor is not None:
        position = decode_cursor(cursor, ("at", "kind", "id"))
        position = {
            "at": cursor_time(position, "at", cursor),
            "kind": str(position["kind"]),
            "id": cursor_int(position, "id", cursor),
        }
    with connection(db, "read the audit") as conn:
        entries = LogStore(conn).audit(position, limit + 1)
    more = len(entries) > limit
    entries = entries[:limit]
    next_cursor = None
    if more and entries:
        last = entries[-1]
        next_cursor = encode_cursor({"at": last.created_at, "kind": last.kind, "id": last.id})
    return AuditPage(entries, next_cursor)
