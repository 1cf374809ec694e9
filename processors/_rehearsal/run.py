"""Run a router's handlers on stored events, each event in a transaction of its own that
always rolls back, and report what each would do.

One transaction per event, not savepoints in one: the transaction's statistics
(``pg_stat_xact_user_tables``) then count that event's writes alone, the locks a handler
takes are held only while its own event runs, and a handler that breaks its transaction
(an error it swallowed, a COMMIT it sends) costs no other event its rehearsal. Nothing is
claimed: the events are read from the log, and inbox_work is never locked.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString

import anyio
import psycopg
from psycopg import pq

from inbox._core.sql import load_queries
from processors._model.errors import HandlerLeftTransactionAbortedError
from processors._model.event import Event, Retry
from processors._model.router import Route, Router
from processors._rehearsal.report import EventRehearsal, Rehearsal, TableWrites
from processors._running.deadline import HandlerDeadline
from processors._running.invoke import call_handler
from processors._running.savepoints import EVENT_SAVEPOINT, UNDO_EVENT

__all__ = ["rehearse", "rehearse_async"]

_QUERIES = load_queries("processors.sql", "queries.sql")


def _q(name: str) -> LiteralString:
    return _QUERIES[name]


# Events read from the log at a time: their bodies are held only while they run.
CHUNK = 100

NOT_SAFE = (
    "not marked safe to rehearse: it may act outside the database, which a rollback does"
    " not undo (mark it with rehearse=True once it does not, or checks event.is_rehearsal)"
)


def rehearse(
    url: str, router: Router, event_ids: Sequence[int], *, timeout_seconds: float = 30.0
) -> Rehearsal:
    """Rehearse ``event_ids`` against ``router`` (see ``rehearse_async``); from sync code."""

    async def main() -> Rehearsal:
        return await rehearse_async(url, router, event_ids, timeout_seconds=timeout_seconds)

    return anyio.run(main)


async def rehearse_async(
    url: str,
    router: Router,
    event_ids: Sequence[int],
    *,
    timeout_seconds: float = 30.0,
    progress: Callable[[int], Awaitable[None]] | None = None,
) -> Rehearsal:
    """Run each stored event's handler as a replay would (``is_replay``, attempt 1, and
    ``is_rehearsal``), in a transaction that rolls back; the report, events by id.

    ``timeout_seconds`` bounds each handler, each statement, and each wait for a lock.
    ``progress`` is awaited after each event with how many have run.
    """
    conn = await psycopg.AsyncConnection.connect(url, application_name="pg-inbox rehearsal")
    try:  # closed in `finally`, not by `async with`: see processors/_worker/listener.py
        conn.prepare_threshold = None  # a pooled server session keeps no statement of ours
        sync_view: psycopg.Connection[Any] = psycopg.Connection(conn.pgconn)
        sync_view.prepare_threshold = None
        session = _Session(conn, sync_view, HandlerDeadline(), timeout_seconds)
        events: list[EventRehearsal] = []
        wanted = sorted({int(i) for i in event_ids})
        try:
            for offset in range(0, len(wanted), CHUNK):
                chunk = wanted[offset : offset + CHUNK]
                cursor = await conn.execute(_q("rehearsal_events"), {"event_ids": chunk})
                rows = await cursor.fetchall()
                await conn.rollback()
                for row in rows:
                    events.append(await _one(session, router, _event(row)))
                    if progress is not None:
                        await progress(len(events))
        finally:
            session.deadline.close()
    finally:
        await conn.close()
    found = {e.event_id for e in events}
    return Rehearsal(events, missing=[i for i in wanted if i not in found])


def _event(row: Sequence[Any]) -> Event:
    event_id, source, key, event_type, received_at, headers, body = row
    return Event(
        id=event_id,
        source=source,
        key=key,
        type=event_type,
        received_at=received_at,
        headers=headers or {},
        body=bytes(body),
        attempt=1,
        is_replay=True,
        is_rehearsal=True,
    )


@dataclass(frozen=True, slots=True)
class _Session:
    """The rehearsal's connection (and the sync handlers' view of it), its handlers'
    deadline, and their default time limit."""

    conn: psycopg.AsyncConnection[Any]
    sync_view: psycopg.Connection[Any]
    deadline: HandlerDeadline
    timeout_seconds: float


async def _one(session: _Session, router: Router, event: Event) -> EventRehearsal:
    conn = session.conn
    route = router.resolve(event.source, event.type)

    def report(**fields: Any) -> EventRehearsal:
        return EventRehearsal(
            event_id=event.id,
            source=event.source,
            key=event.key,
            type=event.type,
            handler=route.name if route else None,
            **fields,
        )

    if route is None:
        return report(outcome="skipped", duration_seconds=0.0, error="no handler is routed")
    if not route.rehearse:
        return report(outcome="skipped", duration_seconds=0.0, error=NOT_SAFE)
    limit = route.timeout_seconds or session.timeout_seconds
    started = time.perf_counter()
    try:
        await conn.execute(_q("rehearsal_limits"), {"timeout_ms": int(limit * 1000)})
        await conn.execute(_q("rehearsal_guard"))
        before = await _writes(conn)
        await conn.execute(EVENT_SAVEPOINT)
        fields = await _call(session, route, event, limit)
        duration = time.perf_counter() - started
        writes: list[TableWrites] = []
        status = conn.pgconn.transaction_status
        if status != pq.TransactionStatus.IDLE:
            # Its writes are still counted once its savepoint is undone.
            if status == pq.TransactionStatus.INERROR:
                await conn.execute(UNDO_EVENT)
            after = await _writes(conn)
            zero = (0, 0, 0)
            writes = [
                TableWrites(
                    table, *(a - b for a, b in zip(n, before.get(table, zero), strict=True))
                )
                for table, n in after.items()
                if n != before.get(table, zero)
            ]
    finally:
        await conn.rollback()
    return report(duration_seconds=duration, writes=writes, **fields)


async def _writes(conn: psycopg.AsyncConnection[Any]) -> dict[str, tuple[int, int, int]]:
    """Rows inserted, updated and deleted per table, as the session's statistics count
    them: this transaction's, and also earlier ones' that the backend has not reported
    yet, so an event's writes are the difference over its transaction."""
    cursor = await conn.execute(_q("rehearsal_writes"))
    return {
        f"{schema}.{table}": (ins, upd, dele)
        for schema, table, ins, upd, dele in await cursor.fetchall()
    }


async def _call(session: _Session, route: Route, event: Event, limit: float) -> dict[str, Any]:
    """Call the handler as the worker does; the outcome's fields of the report."""
    try:
        await call_handler(
            route,
            [event] if route.batch else event,
            session.conn,
            session.sync_view,
            limit_seconds=limit,
            deadline=session.deadline,
        )
        if session.conn.pgconn.transaction_status == pq.TransactionStatus.INERROR:
            raise HandlerLeftTransactionAbortedError(
                f"handler {route.name} returned after one of its statements failed"
            )
    except Retry as exc:
        return {"outcome": "retry", "error": str(exc), "retry_after_seconds": exc.after}
    except Exception as exc:  # noqa: BLE001 - any failure of the handler is its outcome
        return {
            "outcome": "failed",
            "error_class": type(exc).__name__,
            "error": str(exc),
            "traceback": "".join(traceback.format_exception(exc)),
        }
    return {"outcome": "succeeded"}
