"""What a worker process does beside its claim loops, each on a connection of its own: make
sure of the log's partitions ahead, say that it runs (the heartbeat, by which operators count
it running), and say that it stopped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
import psycopg

from inbox._core.logs import get_logger
from processors._claiming.store import WorkStore

__all__ = ["HEARTBEAT_SECONDS", "PARTITIONS_CHECK_SECONDS", "Upkeep"]

log = get_logger("processors.worker")

# How often a worker makes sure the log's partitions are made ahead (they are made weeks
# ahead; a writer also makes a missing one).
PARTITIONS_CHECK_SECONDS = 3600.0
# How often a worker process says it runs (operators count it running for 30 s after).
HEARTBEAT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Upkeep:
    """The upkeep of the worker process ``name``, started at ``started_at``: its connections
    go to ``dsn`` with the worker's ``connect`` keywords, its queries through ``store``."""

    dsn: str
    connect: Mapping[str, Any]
    store: WorkStore
    name: str
    started_at: datetime

    async def report_stopped(self) -> None:
        # Informative only (a worker that is killed never says it): operators judge whether
        # a worker runs by its connections.
        try:
            with anyio.fail_after(5):
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn, autocommit=True, **self.connect
                )
                async with conn:
                    await self.store.register_worker(conn, self.name, self.started_at, stopped=True)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            log.info("worker_stop_not_recorded", worker=self.name, error=str(exc))

    async def keep_partitions_ahead(self) -> None:
        """Make sure of the log's partitions ahead, now and every hour, on a connection of
        its own; a failure is logged and the next round tries again."""
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn,
                    autocommit=True,
                    application_name=f"pg-inbox partitions {self.name}",
                    **self.connect,
                )
                async with conn:
                    made = await self.store.ensure_partitions(conn)
                if made:
                    log.info("log_partitions_made", worker=self.name, partitions=made)
            except (psycopg.Error, OSError) as exc:
                log.warning("log_partitions_unchecked", worker=self.name, error=str(exc))
            await anyio.sleep(PARTITIONS_CHECK_SECONDS)

    async def heartbeat(self) -> None:
        """Say that this process runs, every HEARTBEAT_SECONDS, on a connection of its own
        (remade after a failure; the claim loops report outages)."""
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            while True:
                await anyio.sleep(HEARTBEAT_SECONDS)
                try:
                    if conn is None or conn.closed:
                        conn = await psycopg.AsyncConnection.connect(
                            self.dsn,
                            autocommit=True,
                            application_name=f"pg-inbox heartbeat {self.name}",
                            **self.connect,
                        )
                    await self.store.worker_seen(conn, self.name, self.started_at)
                except (psycopg.Error, OSError):
                    if conn is not None:
                        await conn.close()
                    conn = None
        finally:
            if conn is not None:
                await conn.close()
