"""``LogStore``: every query of the operator's side of ``inbox`` (status, inspection,
retention). ``inbox.queries`` orchestrates; this module owns the SQL and turns rows into
records."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from typing import Any, LiteralString

import psycopg
from psycopg.rows import tuple_row

from inbox._core.sql import load_queries
from inbox._core.tracing import trace_id_of
from inbox._operations.models import (
    Attempt,
    Delivery,
    EventDetail,
    EventSummary,
    HeldKey,
    PrunedPartition,
    PruneResult,
    SourceStatus,
    WorkState,
)
from inbox._operations.records import (
    Activity,
    ActivityPoint,
    AuditEntry,
    ReplayProgress,
    ReplayRun,
    WorkerVersion,
)
from inbox._operations.selection import EventFilter

__all__ = ["REDACTED", "LogStore"]

QUERIES = load_queries("inbox.sql", "operator.sql")

REDACTED = "[redacted]"

Conn = psycopg.Connection[Any]


def _q(name: str) -> LiteralString:
    return QUERIES[name]


class LogStore:
    """The operator's queries, on a connection the caller owns (and commits)."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    def _rows(self, name: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        cursor = self._conn.cursor(row_factory=tuple_row)
        # Unprepared: the optional filters fold away when each execution gets its own plan.
        cursor.execute(_q(name), params, prepare=False)
        return cursor.fetchall()

    # --- status -------------------------------------------------------------------------

    def source_status(
        self, sources: Sequence[str], rejected: Mapping[str, int] | None
    ) -> list[SourceStatus]:
        with self._conn.transaction():
            self._rows("interactive", {})
            rows = self._rows("status_sources", {"sources": list(sources)})
        names = {row[0] for row in rows}
        extra = sorted(set(rejected or {}) - names)  # rejected but never stored: still shown
        result = [
            SourceStatus(
                source=row[0],
                received_1h=row[1],
                received_24h=row[2],
                duplicates_1h=row[3],
                duplicates_24h=row[4],
                rejected=None if rejected is None else rejected.get(row[0], 0),
                pending=row[5],
                retrying=row[6],
                dead=row[7],
                replay_queued=row[8],
                oldest_pending_seconds=row[9],
                processed_per_minute=float(row[10]),
            )
            for row in rows
        ]
        result += [
            SourceStatus(name, 0, 0, 0, 0, (rejected or {})[name], 0, 0, 0, 0, None, 0.0)
            for name in extra
        ]
        return sorted(result, key=lambda s: s.source)

    def held_keys(self, limit: int) -> tuple[list[HeldKey], int]:
        """Held ordered keys (up to ``limit``) and how many there are in all."""
        rows = self._rows("held_keys", {"limit": limit})
        return [HeldKey(*row[:8]) for row in rows], int(rows[0][8]) if rows else 0

    def sessions(self) -> tuple[int, int, float]:
        [(processes, listeners, usage)] = self._rows("status_sessions", {})
        return int(processes), int(listeners), float(usage)

    def running_workers(self) -> list[WorkerVersion]:
        return [WorkerVersion(*row) for row in self._rows("running_workers", {})]

    # --- events -------------------------------------------------------------------------

    def select_ids(
        self, event_filter: EventFilter, *, limit: int | None, before: int | None = None
    ) -> list[int]:
        params = {**event_filter.params(), "limit": limit, "before": before}
        return [int(row[0]) for row in self._rows("select_events", params)]

    def summaries(self, ids: Sequence[int]) -> list[EventSummary]:
        return [EventSummary(*row) for row in self._rows("event_summaries", {"ids": list(ids)})]

    def search(
        self,
        *,
        event_id: int | None,
        source_key: tuple[str, str] | None,
        key: str | None,
        limit: int,
    ) -> list[int]:
        source, source_key_value = source_key or (None, None)
        params = {
            "id": event_id,
            "source": source,
            "source_key": source_key_value,
            "key": key,
            "limit": limit,
        }
        return [int(row[0]) for row in self._rows("search_events", params)]

    def find(
        self, *, event_id: int | None = None, source_key: tuple[str, str] | None = None
    ) -> tuple[Any, ...] | None:
        if event_id is not None:
            rows = self._rows("event_by_id", {"id": event_id})
        else:
            assert source_key is not None
            rows = self._rows("event_by_key", {"source": source_key[0], "key": source_key[1]})
        return rows[0] if rows else None

    def detail(self, row: tuple[Any, ...], redact: Collection[str]) -> EventDetail:
        event_id, source, key, event_type, verifier, received_at, headers, body, sha, tp = row
        redacted = {h.lower() for h in redact}
        shown = {
            name: REDACTED if name.lower() in redacted else value
            for name, value in (headers or {}).items()
        }
        work_rows = self._rows("event_work", {"id": event_id})
        work = WorkState(*work_rows[0]) if work_rows else None
        # The receipt time takes each lookup to the event's partitions of the history.
        event = {"id": event_id, "received_at": received_at}
        deliveries = [Delivery(received_at, bytes(sha), False, None)] + [
            Delivery(at, bytes(digest), bytes(digest) != bytes(sha), _bytes(other), id=d_id)
            for d_id, at, digest, other in self._rows("event_deliveries", event)
        ]
        attempts = [Attempt(*r) for r in self._rows("event_attempts", event)]
        replays = [ReplayRun(*r) for r in self._rows("event_replays", event)]
        [summary] = self.summaries([event_id])
        return EventDetail(
            id=event_id,
            source=source,
            key=key,
            type=event_type,
            verifier=verifier,
            received_at=received_at,
            headers=shown,
            body=bytes(body),
            body_sha256=bytes(sha),
            trace_id=trace_id_of(tp),
            state=summary.state,
            work=work,
            deliveries=deliveries,
            attempts=attempts,
            replays=replays,
        )

    def delivery_body(self, event_id: int, delivery_id: int) -> bytes | None:
        rows = self._rows("delivery_body", {"event_id": event_id, "delivery_id": delivery_id})
        return bytes(rows[0][0]) if rows else None

    # --- activity, replay runs, audit ---------------------------------------------------

    def activity(self, window: timedelta, step: timedelta) -> Activity:
        buckets = int(window / step)
        with self._conn.transaction():
            self._rows("interactive", {})
            rows = self._rows("activity", {"step": step, "buckets": buckets})
        return Activity(window, step, [ActivityPoint(*row) for row in rows])

    def replay_run(self, run_id: int) -> ReplayRun | None:
        rows = self._rows("replay_run", {"id": run_id})
        return ReplayRun(*rows[0]) if rows else None

    def replay_progress(self, run: ReplayRun) -> ReplayProgress:
        [(processed, failed, pending, retrying, attempts)] = self._rows(
            "replay_progress", {"id": run.id}
        )
        return ReplayProgress(run, processed, failed, pending, retrying, int(attempts))

    def audit(self, before: Mapping[str, Any] | None, limit: int) -> list[AuditEntry]:
        position = before or {}
        params = {
            "before_at": position.get("at"),
            "before_kind": position.get("kind"),
            "before_id": position.get("id"),
            "limit": limit,
        }
        return [AuditEntry(*row) for row in self._rows("audit", params)]

    # --- retention ----------------------------------------------------------------------

    def prune_preview(self, older_than_seconds: float) -> PruneResult:
        [(cutoff, deletable, kept, dropped, held)] = self._rows(
            "prune_preview", {"older_than_seconds": older_than_seconds}
        )
        return PruneResult(
            cutoff,
            True,
            int(deletable),
            int(kept),
            partitions_dropped=[PrunedPartition.of(p) for p in dropped],
            partitions_kept=[PrunedPartition.of(p) for p in held],
        )

    def drop_pruned(self) -> int:
        """Drop the tables a prune detached (in the caller's transaction); how many."""
        [(dropped,)] = self._rows("drop_pruned", {})
        return int(dropped)

    def prune(self, older_than_seconds: float, actor: str, via: str) -> PruneResult:
        """Drop through the audited function, the only door through the guard."""
        [(audit_id, cutoff, events, deliveries, attempts, kept, dropped, held, keys)] = self._rows(
            "prune",
            {"older_than_seconds": older_than_seconds, "created_by": actor, "via": via},
        )
        return PruneResult(
            cutoff=cutoff,
            dry_run=False,
            events_deleted=int(events),
            events_kept=int(kept),
            deliveries_deleted=int(deliveries),
            attempts_deleted=int(attempts),
            audit_id=audit_id,
            partitions_dropped=[PrunedPartition.of(p) for p in dropped],
            partitions_kept=[PrunedPartition.of(p) for p in held],
            keys_deleted=int(keys),
        )


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)
