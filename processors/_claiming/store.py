"""``WorkStore``: every query of the processing side. The worker orchestrates; this module
owns the SQL and turns rows into events and decisions into parameters."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, LiteralString

import psycopg
from psycopg.rows import tuple_row
from psycopg.types.json import JsonbBinaryLoader

from inbox._core.pooler import settings_statement
from inbox._core.sql import load_queries
from processors._compat import hooks
from processors._model.claimed import Claimed, ClaimedEvent
from processors._model.decide import Decision, decide_released
from processors._model.event import stored_event

__all__ = [
    "Claim",
    "ClaimCursor",
    "SessionLimits",
    "WorkStore",
    "claim_params",
    "release_busy",
]

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

_JSON = json.JSONDecoder()


def _load_json(data: str | bytes) -> Any:
    """A claimed row's JSON (its headers): jsonb's text never has whitespace around it, so
    the scanner takes it as it comes, without json.loads' detection of the bytes' encoding
    and its two whitespace matches, on every claimed event's path."""
    return _JSON.raw_decode(data if isinstance(data, str) else data.decode())[0]


class _ClaimJsonbLoader(JsonbBinaryLoader):
    """psycopg's binary jsonb loader, parsing with ``_load_json`` (the way psycopg's
    ``set_json_loads`` makes its own, for the one format and type a claim reads)."""

    _loads = staticmethod(_load_json)


def _claim_cursor(conn: AsyncConn) -> psycopg.AsyncCursor[tuple[Any, ...]]:
    """A cursor for claimed rows: binary (the body's bytes and the timestamps come as they are
    stored, not as text to parse), its JSON read by ``_load_json``. The handler's own
    statements on the connection keep psycopg's defaults."""
    cursor = conn.cursor(row_factory=tuple_row, binary=True)
    if hooks().jsonb_loader:
        cursor.adapters.register_loader("jsonb", _ClaimJsonbLoader)
    return cursor


# An index position of inbox_work_claim: (priority, run_at, event_id).
Position = tuple[int, datetime, int]
# Before every entry: a claim from here scans the index from its start.
START: Position = (-32768, datetime.min.replace(tzinfo=UTC), 0)


# A claim looks at no more than this many batches' worth of pending rows (see claim_batch):
# an ordered backlog's followers of keys in flight are passed a window at a time.
CLAIM_WINDOW_BATCHES = 8


def claim_params(
    batch_size: int,
    after: Position = START,
    *,
    windowed: bool = True,
    version: str | None = None,
) -> dict[str, Any]:
    """claim_batch's parameters: up to ``batch_size`` rows after index position ``after``,
    among the next ``CLAIM_WINDOW_BATCHES`` batches' worth of pending rows if ``windowed``,
    for a worker running ``version`` of the code."""
    return {
        "batch_size": batch_size,
        "window": CLAIM_WINDOW_BATCHES * batch_size if windowed else 0,
        "after_priority": after[0],
        "after_run_at": after[1],
        "after_event_id": after[2],
        "version": version,
    }


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed batch, and whether a suspect was found waiting (the caller then gives the
    batch up: a suspect runs with the process to itself). ``last``: the index position of
    the batch's last row (None when empty)."""

    batch: list[ClaimedEvent]
    suspect_waiting: bool
    last: Position | None = None
    window_end: Position | None = None
    """The last position the claim looked at; None when it looked to the queue's end."""


class ClaimCursor:
    """Where a claim loop's next claim starts scanning inbox_work_claim (I/O free).

    A settled work row leaves a dead entry in the index until vacuum removes it, and a claim
    from the index's start walks every one, so a long drain's claims slowed as the dead
    prefix grew. So after a full batch the next claim
    resumes after that batch's last row. A claim looks at one window of pending rows (see
    claim_batch), except after a batch of unordered work. After a claim short of a batch,
    the next claims take turns: one from the start (where the keys that settled free their
    next events), one sweeping the window after the last one swept (where a key whose first
    event came late has its head), so an ordered backlog whose first rows wait for keys in
    flight costs a window a claim, never the whole queue; the sweep starts over at the
    queue's end. What a resumed scan cannot see (a row behind the position: committed late
    with an earlier run_at, given back by a worker that died or a batch released unrun, a
    new live event while the loop was among the replays, a follower whose key's head has
    settled) is found by the scan from the start, which runs after a short batch's sweep
    turn and at least every ``rescan_seconds`` — so such a row waits at most that long, and
    no longer than before when the queue is short.
    """

    def __init__(self, rescan_seconds: float = 1.0) -> None:
        self._rescan_seconds = rescan_seconds
        self._after = START
        self._began = START
        self._sweep = START
        self._rescan_at = 0.0
        self.from_start = True
        """Whether the last ``start`` scans from the beginning (then suspects are looked for)."""
        self.windowed = True
        """Whether the last ``start``'s claim looks at one window only (see claimed)."""

    def start(self, now: float) -> Position:
        """The position the claim taken at monotonic time ``now`` scans after."""
        if now >= self._rescan_at:
            self._after = START
            self.windowed = True
        self.from_start = self._after == START
        if self.from_start:
            self._rescan_at = now + self._rescan_seconds
        self._began = self._after
        return self._after

    def claimed(self, claim: Claim, batch_size: int) -> None:
        """Resume after a full batch. After a short one, alternate between the start and
        the sweep: the windows past the start, one per turn, back to the start at the
        queue's end."""
        if len(claim.batch) == batch_size and claim.last is not None:
            self._after = claim.last
            # After a batch of unordered work the walk needs no window: it stops once it has
            # a batch, and finding the window's end would cost a walk of its own (~10 % of a
            # no-op drain's rate). Past ordered events lie their keys' later events.
            self.windowed = any(item.ordering_key is not None for item in claim.batch)
            return
        self.windowed = True
        if self._began == self._sweep:
            self._sweep = START if claim.window_end is None else claim.window_end
        self._after = self._sweep if self.from_start else START


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Server-side guardrails for a worker session, so a hung or orphaned handler cannot hold
    locks and the vacuum horizon for long."""

    statement_timeout_ms: int
    idle_in_transaction_timeout_ms: int
    transaction_timeout_ms: int
    connection_check_interval_ms: int = 5000


def _claimed_event(row: tuple[Any, ...]) -> ClaimedEvent:
    (
        event_id,
        attempts,
        replay_id,
        crashes,
        source,
        key,
        event_type,
        received_at,
        headers,
        body,
        ordering_key,
        traceparent,
        tracestate,
        *_,  # claim_batch's index position of the row
    ) = row
    claimed = Claimed(event_id=event_id, attempts=attempts, crashes=crashes, replay_id=replay_id)
    # The row comes from our own schema: no need to validate what the database typed.
    event = stored_event(
        id=event_id,
        source=source,
        key=key,
        type=event_type,
        received_at=received_at,
        headers=headers,
        body=body,
        attempt=attempts + 1,
        replay_id=replay_id,
    )
    return ClaimedEvent(
        claimed=claimed,
        event=event,
        ordering_key=ordering_key,
        traceparent=traceparent,
        tracestate=tracestate,
    )


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

    def __init__(self, version: str | None = None) -> None:
        self.version = version

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
        cursor = _claim_cursor(conn)
        await cursor.execute(CLAIM_SUSPECT, {"version": self.version})
        return [_claimed_event(row) for row in await cursor.fetchall()]

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
            cursor = _claim_cursor(conn)
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
            batch=[_claimed_event(row) for row in events],
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
            params = {"name": name, "version": self.version, "started_at": started_at}
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
