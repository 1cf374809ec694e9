"""The console's connections: a psycopg_pool.ConnectionPool it owns, opened on first use.

On first use, not at construction: a mounted sub-app never sees a lifespan event, so the
pool cannot wait for one. The operator API is synchronous (one copy of every query, shared
with the CLI), so each call runs in a worker thread on a connection from the pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import psycopg
from psycopg_pool import ConnectionPool

from inbox._core.config.settings import DatabaseSettings
from inbox._core.database.db import translate_driver_errors
from inbox._core.database.pooler import behind_pooler, connect_kwargs

__all__ = ["ConsolePool"]

T = TypeVar("T")


class ConsolePool:
    def __init__(self, dsn: str, settings: DatabaseSettings) -> None:
        self._dsn = dsn
        self._settings = settings
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    def _get(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                pool: ConnectionPool = ConnectionPool(
                    self._dsn,
                    min_size=min(1, self._settings.pool_max_size),
                    max_size=self._settings.pool_max_size,
                    timeout=self._settings.connect_timeout_seconds,
                    # A connection cut while idle (a database restart) is replaced before
                    # a page gets it, so recovery needs no failed request first.
                    check=ConnectionPool.check_connection,
                    kwargs={
                        "application_name": "pg-inbox console",
                        "connect_timeout": max(1, round(self._settings.connect_timeout_seconds)),
                        **connect_kwargs(
                            behind_pooler(self._settings.pooler, self._dsn),
                            self._settings.prepared_statements,
                        ),
                    },
                    open=False,
                    name="pg-inbox console",
                )
                pool.open(wait=False)
                self._pool = pool
            return self._pool

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        with translate_driver_errors("reach the database"):
            conn: psycopg.Connection[Any]
            with self._get().connection() as conn:
                return fn(conn, *args, **kwargs)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(conn, *args, **kwargs)`` in a thread; commits when it returns."""
        return await anyio.to_thread.run_sync(partial(self._call, fn, args, kwargs))

    async def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await anyio.to_thread.run_sync(pool.close)
