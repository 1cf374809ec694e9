"""A claim loop's connections, from connecting until the connection is lost: the claim
transaction's, an autocommit side connection beside it, and the sync handlers' view of the
claim connection."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from processors._claiming.store import SessionLimits, WorkStore

__all__ = ["ClaimSession", "claim_session"]


@dataclass(frozen=True, slots=True)
class ClaimSession:
    """What one claim loop works with, from connecting until the connection is lost: the
    claim transaction's connection, the autocommit side connection (claim counters, next
    due), the sync handlers' view of the claim connection, and the loop's name."""

    conn: psycopg.AsyncConnection[Any]
    side: psycopg.AsyncConnection[Any]
    sync_view: psycopg.Connection[Any]
    worker: str


@asynccontextmanager
async def claim_session(
    dsn: str,
    worker: str,
    connect: Mapping[str, Any],
    store: WorkStore,
    limits: SessionLimits,
    *,
    pooled: bool,
) -> AsyncIterator[ClaimSession]:
    """Connect the claim loop ``worker`` to ``dsn`` (with the worker's ``connect`` keywords),
    its session held to ``limits``; ``pooled``: through a transaction pooler."""
    label = f"pg-inbox worker {worker}"
    conn = await psycopg.AsyncConnection.connect(dsn, application_name=label, **connect)
    try:
        # The claim counters need not wait for a WAL flush: they guard against a *worker*
        # dying, which loses nothing PostgreSQL has already accepted; a PostgreSQL crash
        # could lose the last few counts, costing a poison pill one more try. Skipping
        # the flush takes milliseconds off every batch's start, and so off wake latency.
        side = await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, application_name=f"{label} claims", **connect
        )
        try:
            if pooled:
                # A shared server session keeps nothing of ours: the limits open each
                # claim transaction, and the counters wait for their flush.
                store.per_transaction = store.limits_statement(conn, limits, local=True)
            else:
                await side.execute("set synchronous_commit = off")
                await store.apply_session_limits(conn, limits)
            # Sync handlers get a sync psycopg connection over the very same server
            # session: the claim transaction, seen from a worker thread.
            sync_view: psycopg.Connection[Any] = psycopg.Connection(conn.pgconn)
            # Prepared statements belong to the session, but psycopg names and tracks
            # them per connection object: two objects preparing on one session collide
            # on their names, and one's DEALLOCATE ALL (after any ROLLBACK TO) drops the
            # other's. Only the async connection prepares.
            sync_view.prepare_threshold = None
            yield ClaimSession(conn, side, sync_view, worker)
        finally:
            await side.close()
    finally:
        await conn.close()
