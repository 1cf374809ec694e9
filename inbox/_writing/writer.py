"""``InboxWriter``: append webhooks to the inbox from synchronous code (Django, Flask, ...).

A thin shell over ``inbox._writing.plan``; ``inbox._writing.writer_async`` is its async twin.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal

import psycopg
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool

from inbox._core.db import translate_driver_errors
from inbox._core.errors import InboxError
from inbox._core.logs import get_logger
from inbox._core.pool_care import PoolCare
from inbox._writing.plan import (
    MAX_WRITE_ROUNDS,
    NOTIFY_WORK,
    PING,
    NotifyCoalescer,
    WriteResult,
    owned_pool_options,
    prepare_write,
    read_result,
    write_query,
)

__all__ = ["InboxWriter"]

NotifyMode = Literal["after_commit", "in_transaction", "off"]
log = get_logger("inbox.writer")


class InboxWriter:
    """Appends raw webhooks to the inbox log; one round trip for a new event.

    Give it a connection string (it then owns a pool of autocommit connections) or your own
    ``psycopg_pool.ConnectionPool``. ``write(..., conn=c)`` joins ``c``'s open transaction
    instead: the event commits or rolls back with the caller's own writes.
    ``connection_kwargs`` go to every connection of an owned pool (``connect_timeout``,
    ``options="-c statement_timeout=5000"``, ...).
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        pool: ConnectionPool | None = None,
        notify: NotifyMode = "after_commit",
        notify_interval_seconds: float = 0.01,
        min_size: int = 1,
        max_size: int = 10,
        timeout_seconds: float = 5.0,
        connection_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self._owns_pool = pool is None
        self._care: PoolCare | None = None
        if pool is None:
            if dsn is None:
                raise TypeError("InboxWriter needs a connection string or pool=")
            options = owned_pool_options(
                min_size=min_size,
                max_size=max_size,
                timeout_seconds=timeout_seconds,
                connection_kwargs=connection_kwargs,
            )
            self._care = PoolCare(dsn)
            pool = ConnectionPool(dsn, open=False, **options, **self._care.options())
            self._care.attach(pool)
            pool.open()
        elif dsn is not None:
            raise TypeError("InboxWriter takes a connection string or pool=, not both")
        self._pool: ConnectionPool = pool
        self._notify = notify
        self._coalescer = NotifyCoalescer(notify_interval_seconds)
        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()

    def write(
        self,
        source: str,
        key: str,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        event_type: str | None = None,
        verifier: str | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> WriteResult:
        """Append one delivery. Returns the event id and whether it was new.

        A duplicate ``(source, key)`` creates no work; it is recorded as a delivery.
        Raises ``InvalidWriteError`` before any SQL for bad input, and
        ``DatabaseUnavailableError`` when the write could not be committed.
        """
        in_callers_txn = conn is not None and not conn.autocommit
        params = prepare_write(
            source=source,
            key=key,
            body=body,
            headers=headers,
            event_type=event_type,
            verifier=verifier,
            notify_in_transaction=self._notify == "in_transaction"
            or (in_callers_txn and self._notify != "off"),
        )
        with translate_driver_errors(f"writing {source}:{key}"):
            if conn is not None:
                result = self._run(conn, params)
            else:
                with self._pool.connection() as own:
                    result = self._run(own, params)
                    if not own.autocommit:
                        own.commit()
        if result.is_new and not params["notify"] and not in_callers_txn and self._notify != "off":
            self._after_commit()
        return result

    def ping(self) -> None:
        """Check that the database answers and holds the inbox schema (health checks).

        Raises ``DatabaseUnavailableError``, or ``MigrationError`` when the schema is missing.
        """
        if self._care is not None:
            self._care.known_down(self._pool)
        with translate_driver_errors("checking the database"), self._pool.connection() as conn:
            conn.execute(PING)

    def _run(self, conn: psycopg.Connection[Any], params: dict[str, object]) -> WriteResult:
        for round_no in range(MAX_WRITE_ROUNDS):
            # The caller's connection may have any row factory; ours reads tuples.
            row = (
                conn.cursor(row_factory=tuple_row).execute(write_query(round_no), params).fetchone()
            )
            result = read_result(row)
            if result is not None:
                return result
        raise InboxError(f"could not write or find {params['source']}:{params['key']}")

    def _after_commit(self) -> None:
        delay = self._coalescer.after_commit(time.monotonic())
        if delay == 0.0:
            self._send_notify()
        elif delay is not None:
            with self._timer_lock:
                self._timer = threading.Timer(delay, self._send_trailing)
                self._timer.daemon = True
                self._timer.start()

    def _send_trailing(self) -> None:
        if self._coalescer.take_trailing(time.monotonic()):
            self._send_notify()

    def _send_notify(self) -> None:
        # A hint only: a lost notification costs latency (the workers' poll finds the row),
        # never an event, so a failure here is logged and not raised to the writer.
        try:
            with self._pool.connection() as conn:
                conn.execute(NOTIFY_WORK)
                if not conn.autocommit:
                    conn.commit()
        except (psycopg.Error, OSError) as exc:
            log.warning("notify_failed", error=str(exc))

    def close(self) -> None:
        """Send a pending wake-up now, and close the pool if the writer owns it."""
        with self._timer_lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self._send_trailing()  # a no-op unless a trailing notify is still owed
        if self._owns_pool:
            self._pool.close()

    def __enter__(self) -> InboxWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
