"""The console's calls into the operator API (``inbox.queries`` and ``inbox._operations.replay``):
the one place that knows which function answers which page. No SQL here: the CLI and the
console share one copy of every query. Each function takes the pool's connection first
(``ConsolePool.run`` passes it)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import psycopg

from inbox import queries
from inbox._operations import console_sessions as _sessions
from inbox._operations import console_sign_ins as _sign_ins
from inbox._operations import rehearsal as _rehearsal
from inbox._operations import replay as _replay
from inbox._operations.models import EventDetail, EventPage, EventSummary, Status
from inbox._operations.records import Activity, AuditPage, ReplayProgress, WorkerVersion
from inbox._operations.replay import ReplayResult
from inbox._operations.store import LogStore
from inbox.console._filters import ParsedFilter

__all__ = [
    "Overview",
    "audit",
    "begin_sign_in",
    "dead_page",
    "delivery_body",
    "end_session",
    "event_detail",
    "events_page",
    "forgive_sign_in",
    "overview",
    "rehearsal_request",
    "rehearsal_selection",
    "rehearsal_workers",
    "replay_preview",
    "replay_progress",
    "replay_start",
    "request_rehearsal",
    "retry_dead",
    "retry_preview",
    "running_workers",
    "search",
    "start_session",
    "touch_session",
]

Conn = psycopg.Connection[Any]

SEARCH_LIMIT = 100
AUDIT_PAGE = 50


@dataclass(frozen=True, slots=True)
class Overview:
    status: Status
    hour: Activity
    day: Activity


def overview(conn: Conn, sources: Sequence[str], receiver_metrics: Sequence[str]) -> Overview:
    return Overview(
        status=queries.status(conn, sources=sources, receiver_metrics=receiver_metrics),
        hour=queries.activity(conn, queries.LAST_HOUR),
        day=queries.activity(conn, queries.LAST_DAY),
    )


def events_page(conn: Conn, parsed: ParsedFilter) -> EventPage:
    """A page of the filter; a malformed cursor is a ``ValueError``."""
    return queries.events(conn, parsed.event_filter, limit=parsed.limit, cursor=parsed.cursor)


def dead_page(conn: Conn, parsed: ParsedFilter) -> EventPage:
    return queries.dead(conn, parsed.event_filter, limit=parsed.limit, cursor=parsed.cursor)


def search(conn: Conn, text: str) -> list[EventSummary]:
    """The events ``text`` names: an id, ``SOURCE:KEY``, or a provider key in any source."""
    return queries.search(conn, text, limit=SEARCH_LIMIT)


def event_detail(conn: Conn, event_id: int, redact: Collection[str]) -> EventDetail:
    return queries.event(conn, event_id, redact=redact)


def delivery_body(conn: Conn, event_id: int, delivery_id: int) -> bytes:
    return queries.delivery_body(conn, event_id, delivery_id)


def _selection(parsed: ParsedFilter, ids: Sequence[int] | None) -> dict[str, Any]:
    """Ids, the filter, or both (both narrow); the detail page's replay sends only ids."""
    selection: dict[str, Any] = {"ids": ids}
    if not parsed.is_empty() or ids is None:
        selection["event_filter"] = parsed.event_filter
    return selection


def replay_preview(
    conn: Conn,
    parsed: ParsedFilter,
    ids: Sequence[int] | None,
    sample: int,
    version: str | None = None,
) -> ReplayResult:
    """The dry run: how many the selection holds, how many were processed, the first few,
    the running workers and what they mean for a run that requires ``version`` (or not)."""
    return _replay.replay(
        conn,
        reason="(preview)",
        dry_run=True,
        sample_size=sample,
        via="console",
        require_version=version,
        **_selection(parsed, ids),
    )


def replay_start(
    conn: Conn,
    parsed: ParsedFilter,
    ids: Sequence[int] | None,
    reason: str,
    actor: str,
    version: str | None = None,
) -> ReplayResult:
    return _replay.replay(
        conn,
        reason=reason,
        actor=actor,
        via="console",
        require_version=version,
        **_selection(parsed, ids),
    )


def retry_preview(conn: Conn, ids: Sequence[int], version: str | None = None) -> ReplayResult:
    """The dry run of a dead-letter retry of ``ids``: the running workers, and what they
    mean for it."""
    return _replay.retry_dead(
        conn,
        reason="(preview)",
        ids=ids,
        dry_run=True,
        sample_size=0,
        via="console",
        require_version=version,
    )


def retry_dead(
    conn: Conn, ids: Sequence[int], reason: str, actor: str, version: str | None = None
) -> ReplayResult:
    return _replay.retry_dead(
        conn, reason=reason, ids=ids, actor=actor, via="console", require_version=version
    )


def replay_progress(conn: Conn, run_id: int) -> ReplayProgress:
    return queries.replay_progress(conn, run_id)


def running_workers(conn: Conn) -> list[WorkerVersion]:
    """The worker processes running now, by the version of the code they run."""
    return LogStore(conn).running_workers()


def audit(conn: Conn, cursor: str | None) -> AuditPage:
    return queries.audit(conn, limit=AUDIT_PAGE, cursor=cursor)


# The sessions of the console's users (inbox.console._auth).
start_session = _sessions.start_session
touch_session = _sessions.touch_session
end_session = _sessions.end_session

# The count of failed sign-ins every console process shares (inbox.console._limits).
begin_sign_in = _sign_ins.begin_sign_in
forgive_sign_in = _sign_ins.forgive_sign_in


def rehearsal_selection(conn: Conn, parsed: ParsedFilter, ids: Sequence[int] | None) -> list[int]:
    """The ids a rehearsal of the selection runs, oldest first (as a replay queues them)."""
    assert parsed.event_filter is not None
    chosen = parsed.event_filter
    if ids is not None:
        chosen = replace(chosen, ids=tuple(ids))
    return _replay.event_ids(conn, chosen)


rehearsal_workers = _rehearsal.rehearsal_workers
request_rehearsal = _rehearsal.request_rehearsal
rehearsal_request = _rehearsal.rehearsal_request
