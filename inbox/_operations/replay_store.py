"""``ReplayStore``: the queries of replays, dead-letter retries and skips (inbox/sql/replay.sql),
in the caller's transaction. ``replay`` decides what a run does; this module writes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString

import psycopg
from psycopg.types.json import Jsonb

from inbox._core.sql import load_queries
from inbox._operations.records import ReplayRun

__all__ = ["ReplayStore"]

QUERIES = load_queries("inbox.sql", "replay.sql")


def _q(name: str) -> LiteralString:
    return QUERIES[name]


class ReplayStore:
    """The replay's queries, in the caller's transaction."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def _one(self, name: str, params: dict[str, Any]) -> Any:
        row = self._conn.execute(_q(name), params).fetchone()
        return None if row is None else row[0]

    def begin_snapshot(self) -> None:
        """The first statement of the transaction: everything after reads one snapshot."""
        self._conn.execute(_q("replay_snapshot"))

    def to_queue(self, ids: Sequence[int]) -> tuple[list[int], int]:
        """The ``ids`` without pending work, in their order, and how many of those were
        processed successfully before."""
        rows = self._conn.execute(_q("selection_work"), {"event_ids": list(ids)}).fetchall()
        return [int(row[0]) for row in rows], sum(1 for row in rows if row[1])

    def begin_run(self, run: ReplayRun) -> int:
        """Write the run's audit row, first: its id (what its work rows carry)."""
        return int(
            self._one(
                "begin_replay_run",
                {
                    "kind": run.kind,
                    "created_by": run.created_by,
                    "reason": run.reason,
                    "filter": Jsonb(run.filter),
                    "selected": run.selected,
                    "queued": run.queued,
                    "rate": run.rate_per_second,
                    "via": run.via,
                    "required_version": run.required_version,
                },
            )
        )

    def record_rehearsal(
        self,
        *,
        created_by: str,
        reason: str,
        selection: dict[str, Any],
        selected: int,
        outcome: dict[str, int],
        via: str,
    ) -> int:
        """Write a rehearsal's audit row: its id."""
        return int(
            self._one(
                "record_rehearsal",
                {
                    "created_by": created_by,
                    "reason": reason,
                    "filter": Jsonb(selection),
                    "selected": selected,
                    "outcome": Jsonb(outcome),
                    "via": via,
                },
            )
        )

    def request_rehearsal(
        self,
        *,
        created_by: str,
        reason: str,
        selection: dict[str, Any],
        event_ids: Sequence[int],
        form: dict[str, Any],
        timeout_seconds: float,
        via: str,
    ) -> int:
        """Write a requested rehearsal's audit row and its request: the row's id."""
        return int(
            self._one(
                "request_rehearsal",
                {
                    "created_by": created_by,
                    "reason": reason,
                    "filter": Jsonb(selection),
                    "event_ids": list(event_ids),
                    "form": Jsonb(form),
                    "timeout_seconds": timeout_seconds,
                    "via": via,
                },
            )
        )

    def rehearsal_request(self, replay_id: int) -> dict[str, Any] | None:
        """A requested rehearsal's row and its audit row's, by column name."""
        cursor = self._conn.execute(_q("rehearsal_request"), {"replay_id": replay_id})
        row = cursor.fetchone()
        if row is None:
            return None
        return {d.name: v for d, v in zip(cursor.description or (), row, strict=True)}

    def rehearsal_workers(self, event_ids: Sequence[int]) -> tuple[list[str], int]:
        """The events' sources, and how many running workers handle them all."""
        row = self._conn.execute(_q("rehearsal_workers"), {"event_ids": list(event_ids)}).fetchone()
        assert row is not None
        return list(row[0]), int(row[1])

    def enqueue(self, replay_id: int, ids: Sequence[int], offset: int) -> int:
        cursor = self._conn.execute(
            _q("enqueue_replay"),
            {"event_ids": list(ids), "replay_id": replay_id, "offset": offset},
        )
        return len(cursor.fetchall())

    def wake_workers(self) -> None:
        self._conn.execute(_q("wake_workers"))

    def skip_dead(
        self, ids: Sequence[int], created_by: str, reason: str, via: str
    ) -> tuple[int | None, list[int]]:
        rows = self._conn.execute(
            _q("skip_dead"),
            {
                "event_ids": list(ids),
                "created_by": created_by,
                "reason": reason,
                "via": via,
                "filter": Jsonb({"ids": list(ids)}),
            },
        ).fetchall()
        if rows:
            self._conn.execute(_q("wake_workers"))
        return (int(rows[0][0]) if rows else None), sorted(int(r[1]) for r in rows)

    def runs(self, limit: int) -> list[ReplayRun]:
        cursor = self._conn.execute(_q("replay_runs"), {"limit": limit})
        return [ReplayRun(*row) for row in cursor.fetchall()]
