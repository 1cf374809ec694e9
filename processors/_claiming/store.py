"""``WorkStore``: every query of the processing side. The worker orchestrates; this module
owns the SQL and turns decisions into parameters (a claim's rows become events in ``rows``;
where a claim scans from is ``cursor``'s)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, LiteralString

import psycopg
from psycopg.rows import tuple_row

from inbox._core.database.pooler import settings_statement
from inbox._core.sql import load_queries
from processors._claiming.cursor import START, Claim, Position, claim_params
from processors._claiming.rows import claim_cursor, claimed_event
from processors._model.claimed import ClaimedEvent
from processors._model.decide import Decision, decide_released

__all__ = ["SessionLimits", "WorkStore", "release_busy"]

QUERIES = load_queries("processors.sql", "queries.sql")
CLAIM_BATCH: LiteralString = QUERIES["claim_batch"]
CLAIM_SUSPECT: LiteralString = QUERIES["claim_suspect"]
COUNT_CLAIMS: LiteralString = QUERIES["count_claims"]
NEXT_DUE: LiteralString = QUERIES["next_due"]
SETTLE_BATCH: LiteralString = QUERIES["settle_batch"]
UNSETTLED_OF: LiteralString = QUERIES["unsettled_of"]
REGISTER_WORKER: LiteralString = QUERIES["register_worker"]
ENSURE_PARTITIONS: LiteralString = QUERIES["ensure_partitions"]
WORKER_STOPPED: LiteralString = QUERIES["worker_stopped"]
WORKER_SEEN: LiteralString = QUERIES["worker_seen"]

AsyncConn = psycopg.AsyncConnection[Any]


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Server-side guardrails for a worker session, so a hung or orphaned handler cannot hold
    locks and the vacuum horizon for long."""

    statement_timeout_ms: int
    idle_in_transaction_timeout_ms: int
    transaction_timeout_ms: int
    connection_check_interval_ms: int = 5000


def _column(values: list[Any]) -> list[Any] | None:
    """A parameter array of a batch's column, or None (SQL NULL) when every value is null:
    a multi-array ``unnest`` pads a NULL array with nulls, so the rows are the same, and the
    array is not dumped (in a batch that succeeded, the settle's five nullable columns).
    psycopg prepares each mix of NULLs and arrays as a statement of its own (a NULL has no
    type until the query's cast): a handful of shapes in practice (success, failures,
    releases, replays)."""
    return None if values.count(None) == len(values) else values


def release_busy(
    batch: Sequence[ClaimedEvent], busy: set[int]
) -> tuple[list[ClaimedEvent], list[Decision]]:
    """The events of ``batch`` to run, and the release of those whose key is busy."""
    now = datetime.now(UTC)
    released = [decide_released(i.claimed, now=now) for i in batch if i.claimed.event_id in busy]
    return [i for i in batch if i.claimed.event_id not in busy], released


class WorkStore:
    """The processing side's queries, on connections the worker owns, for a worker running
    ``version`` of the handlers' code (it claims only work that requires no other)."""

    def __init__(self, version: str | None = None, sources: Sequence[str] = ()) -> None:
        self.version = version
        # The sources the router handles, recorded with the process: the console asks for
        # a rehearsal only while a worker that can run it runs.
        self.sources = sorted(set(sources))

    # Behind a transaction pooler, the session limits as one statement that opens each
    # claim transaction (set_config(..., true)): nothing may outlive it on a shared server
    # session. None on a direct connection, whose session keeps them (apply_session_limits).
    per_transaction: Any = None

    def limits_statement(self, conn: AsyncConn, limits: SessionLimits, *, local: bool) -> Any:
        """One statement that sets ``limits`` for the session, or the transaction."""
        settings = {
            "statement_timeout": limits.statement_timeout_ms,
            "idle_in_transaction_session_timeout": limits.idle_in_transaction_timeout_ms,
            "client_connection_check_interval": limits.connection_check_interval_ms,
        }
        if conn.info.server_version >= 170000:
            settings["transaction_timeout"] = limits.transaction_timeout_ms
        return settings_statement({k: f"{v}ms" for k, v in settings.items()}, local=local)

    async def apply_session_limits(self, conn: AsyncConn, limits: SessionLimits) -> None:
        await conn.execute(self.limits_statement(conn, limits, local=False))
        await conn.commit()

    async def _open_transaction(self, conn: AsyncConn) -> None:
        if self.per_transaction is not None:
            await conn.execute(self.per_transaction)

    async def claim_suspect(self, conn: AsyncConn) -> list[ClaimedEvent]:
        """Open the claim transaction and lock one suspect (an event whose earlier claim
        never settled), if there is one."""
        await self._open_transaction(conn)
        cursor = claim_cursor(conn)
        await cursor.execute(CLAIM_SUSPECT, {"version": self.version})
        return [claimed_event(row) for row in await cursor.fetchall()]

    async def claim_batch(
        self,
        conn: AsyncConn,
        batch_size: int,
        *,
        look_for_suspect: bool,
        then: LiteralString | None = None,
        after: Position = START,
        windowed: bool = True,
    ) -> Claim:
        """Open the claim transaction and lock up to ``batch_size`` due events that are not
        suspects, scanning the index after ``after`` (see ClaimCursor); in the same round
        trip, look for a suspect and run ``then`` (the batch's savepoint), so a woken worker
        reaches its first handler sooner."""
        async with conn.pipeline():
            await self._open_transaction(conn)
            suspects = conn.cursor(row_factory=tuple_row)
            if look_for_suspect:
                await suspects.execute(CLAIM_SUSPECT, {"version": self.version})
            cursor = claim_cursor(conn)
            params = claim_params(batch_size, after, windowed=windowed, version=self.version)
            await cursor.execute(CLAIM_BATCH, params)
            if then is not None:
                await conn.execute(then)
            rows = await cursor.fetchall()
            suspect_waiting = look_for_suspect and bool(await suspects.fetchall())
        # Each row ends with its position; the one row that is no event (attempts null) is
        # the window's end (see claim_batch).
        events = [row for row in rows if row[1] is not None]
        [end] = [row for row in rows if row[1] is None]
        return Claim(
            batch=[claimed_event(row) for row in events],
            suspect_waiting=suspect_waiting,
            last=(events[-1][-2], events[-1][-1], events[-1][0]) if events else None,
            window_end=None if end[-1] is None else (end[-2], end[-1], end[0]),
        )

    async def next_due_in(self, conn: AsyncConn) -> float | None:
        """Seconds until the earliest pending event that is not due yet; None if none."""
        cursor = conn.cursor(row_factory=tuple_row)
        await cursor.execute(NEXT_DUE)
        row = await cursor.fetchone()
        return None if row is None or row[0] is None else float(row[0])

    async def count_claims(
        self, side_conn: AsyncConn, batch: Sequence[ClaimedEvent], worker: str
    ) -> set[int]:
        """Durably count the claims (autocommit connection) before any handler runs.

        Returns the ordered events whose key another event's claim holds (in flight, or a
        suspect): they must be released unrun, so a key runs one event at a time."""
        ordering_keys = _column([item.ordering_key for item in batch])
        cursor = side_conn.cursor(row_factory=tuple_row)
        await cursor.execute(
            COUNT_CLAIMS,
            {
                "event_ids": [item.claimed.event_id for item in batch],
                # Sources only matter beside an ordering key (see count_claims).
                "sources": None if ordering_keys is None else [i.event.source for i in batch],
                "ordering_keys": ordering_keys,
                "worker": worker,
            },
        )
        return {int(row[0]) for row in await cursor.fetchall()}

    async def settle(
        self,
        conn: AsyncConn,
        decisions: Sequence[Decision],
        worker: str,
        received_at: Mapping[int, datetime],
    ) -> None:
        """Write every decision of the batch in one statement; the caller commits.
        ``received_at``: each event's receipt time (its attempts' partition)."""
        if not decisions:
            return
        await conn.execute(
            SETTLE_BATCH,
            {
                "event_ids": [d.event_id for d in decisions],
                "attempts": [d.attempt for d in decisions],
                "outcomes": [d.outcome for d in decisions],
                "states": [d.state for d in decisions],
                # Binary arrays take their type from the first element: floats, always.
                "delays": [float(d.delay_seconds) for d in decisions],
                "started": [d.started_at for d in decisions],
                "finished": [d.finished_at for d in decisions],
                "handlers": _column([d.handler for d in decisions]),
                "error_classes": _column([d.error_class for d in decisions]),
                "error_messages": _column([d.error_message for d in decisions]),
                "replay_ids": _column([d.replay_id for d in decisions]),
                "error_tracebacks": _column([d.error_traceback for d in decisions]),
                "received_ats": [received_at[d.event_id] for d in decisions],
                "worker": worker,
                "version": self.version,
            },
        )

    async def ensure_partitions(self, conn: AsyncConn) -> int:
        """Make the log's partitions from now to a few periods ahead; how many were new."""
        cursor = conn.cursor(row_factory=tuple_row)
        await cursor.execute(ENSURE_PARTITIONS)
        row = await cursor.fetchone()
        return 0 if row is None else int(row[0])

    async def register_worker(
        self, conn: AsyncConn, name: str, started_at: datetime, *, stopped: bool = False
    ) -> None:
        """Say which code this worker process runs (autocommit connection), or that it
        stopped."""
        if stopped:
            await conn.execute(WORKER_STOPPED, {"name": name, "started_at": started_at})
        else:
            params = {
                "name": name,
                "version": self.version,
                "started_at": started_at,
                "sources": self.sources,
            }
            await conn.execute(REGISTER_WORKER, params)

    async def worker_seen(self, conn: AsyncConn, name: str, started_at: datetime) -> None:
        """The heartbeat of a running worker process (autocommit connection)."""
        await conn.execute(WORKER_SEEN, {"name": name, "started_at": started_at})

    async def unsettled(self, conn: AsyncConn, event_ids: Sequence[int]) -> set[int]:
        """Which of these events a lost COMMIT did not settle."""
        await self._open_transaction(conn)
        cursor = conn.cursor(row_factory=tuple_row)
        await cursor.execute(UNSETTLED_OF, {"event_ids": list(event_ids)})
        return {int(row[0]) for row in await cursor.fetchall()}
