"""``InboxWriter``: append webhooks to the inbox from synchronous code (Django, Flask, ...).

A thin shell over ``inbox._writing.base`` (arguments, the plan of a write) and
``inbox._writing.plan`` (checks, statements); ``inbox._writing.writer_async`` is its async twin.
psycopg and psycopg_pool are imported where a writer first needs them (its pool, its first
write), so ``from inbox import InboxWriter`` loads no driver (tests/test_import_cost.py).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, LiteralString

from inbox._core.database.db import translate_driver_errors
from inbox._core.errors import InboxError
from inbox._writing.base import WriterBase, log, rounds_exhausted, write_rounds
from inbox._writing.plan import (
    NOTIFY_WORK,
    PARTITION_FOR,
    PING,
    WriteRequest,
    WriteResult,
    first_row,
    missing_partition,
    read_result,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from inbox._core.database.pool_care import PoolCare

__all__ = ["InboxWriter"]


class InboxWriter(WriterBase["ConnectionPool", "psycopg.Connection[Any]", WriteResult]):
    """Appends raw webhooks to the inbox log; one round trip for a new event.

    Give it a connection string (it then owns a pool of autocommit connections) or your own
    ``psycopg_pool.ConnectionPool``. ``write(..., conn=c)`` joins ``c``'s open transaction
    instead: the event commits or rolls back with the caller's own writes.
    ``connection_kwargs`` go to every connection of an owned pool (``connect_timeout``, ...).

    Standalone writes from many threads are group-committed in the callers' own threads
    (``inbox._writing.groups_sync``): the writer starts no thread. It is fork-safe: in a
    child process (gunicorn ``--preload`` makes the writer before forking its workers) the
    first write leaves the parent's pool alone and makes the writer's own; a writer given a
    ``pool=`` refuses to write in a child, since that pool's connections are the parent's.
    """

    # Set when the writer makes its own pool: prompt reconnection after a server restart.
    _care: PoolCare | None = None

    def _make_pool(self, dsn: str, options: dict[str, Any]) -> ConnectionPool:
        from psycopg_pool import ConnectionPool

        from inbox._core.database.pool_care import PoolCare

        self._care = PoolCare(dsn, options["kwargs"])
        pool = ConnectionPool(dsn, open=False, **options, **self._care.options())
        self._care.attach(pool)
        pool.open()
        return pool

    def _init_io(self) -> None:
        from inbox._writing.groups_sync import SyncWriteGroups

        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._closed = False
        self._pid = os.getpid()
        self._groups = SyncWriteGroups(
            self._fetch_own,
            self._write_one,
            max_in_flight=max(1, min(self._groups_wanted, self._pool.max_size // 2)),
        )

    def _write(self, request: WriteRequest, conn: psycopg.Connection[Any] | None) -> WriteResult:
        if self._closed:
            raise InboxError("this InboxWriter is closed: make a new one to write")
        if os.getpid() != self._pid:
            self._forked()
        plan = self._plan(request, conn)
        with translate_driver_errors(f"writing {request.source}:{request.key}"):
            at = self._partition_wanted(plan)
            if at is not None:
                self._partition_for(at)
            if conn is None:
                if plan.notifies_in_statement:
                    result = self._write_one(plan.params)
                else:
                    result = self._groups.write(plan.params)
            else:
                try:
                    result = self._run(conn, plan.params)
                except Exception as exc:
                    if missing_partition(exc):
                        raise self._no_partition(plan.params) from exc
                    raise
        if self._owes_wake_up(plan, result):
            self._after_commit()
        return result

    def _forked(self) -> None:
        """In a child process: the pool's connections are the parent's sockets. They are let
        go, never closed (closing would end the parent's sessions; psycopg does not finish a
        connection in a process that did not open it), and the child makes its own."""
        if not self._owns_pool:
            raise InboxError(
                "InboxWriter(pool=...) used in a forked child: that pool's connections belong"
                " to the parent process; make the pool (or the writer) after the fork"
            )
        self._pool = self._make_pool(*self._pool_recipe)
        self._init_io()

    def ping(self) -> None:
        """Check that the database answers and holds the inbox schema (health checks).

        Raises ``DatabaseUnavailableError``, or ``MigrationError`` when the schema is missing.
        """
        if self._care is not None:
            self._care.known_down(self._pool)
        with translate_driver_errors("checking the database"), self._pool.connection() as conn:
            conn.execute(PING)

    def _write_one(self, params: dict[str, Any]) -> WriteResult:
        """One write on a connection of the pool, committed; when no partition of the log
        holds its receipt time (a prune dropped one the writer knew, or none was made ahead),
        the partition is made and the write goes again."""
        try:
            return self._write_own(params)
        except Exception as exc:
            if not missing_partition(exc):
                raise
        self._partitions.forget()
        self._partition_for(params["received_at"])
        return self._write_own(params)

    def _fetch_own(self, query: LiteralString, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run one statement on a connection of the pool, committed, and return its rows.
        Behind a pooler the transaction's settings go first, in the same implicit transaction
        and the same round trip: the rows are read once the pipeline's sync has brought them
        (fetching inside the pipeline would cost a flush's round trip, then the sync's)."""
        from psycopg.rows import tuple_row

        with self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=tuple_row)
            if self._prelude is None:
                cursor.execute(query, params)
            else:
                with conn.pipeline():
                    conn.execute(self._prelude)
                    cursor.execute(query, params)
            rows = cursor.fetchall()
            if not conn.autocommit:
                conn.commit()
        return rows

    def _write_own(self, params: dict[str, Any]) -> WriteResult:
        for query in write_rounds():
            result = read_result(first_row(self._fetch_own(query, params)))
            if result is not None:
                return result
        raise rounds_exhausted(params)

    def _partition_for(self, at: Any) -> None:
        row = first_row(self._fetch_own(PARTITION_FOR, {"at": at}))
        if row is not None:
            self._partitions.add(row[0], row[1])

    def _run(self, conn: psycopg.Connection[Any], params: dict[str, Any]) -> WriteResult:
        from psycopg.rows import tuple_row

        # The caller's connection may have any row factory; ours reads tuples.
        cursor = conn.cursor(row_factory=tuple_row)
        for query in write_rounds():
            result = read_result(cursor.execute(query, params).fetchone())
            if result is not None:
                return result
        raise rounds_exhausted(params)

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
        import psycopg

        try:
            with self._pool.connection() as conn:
                conn.execute(NOTIFY_WORK)
                if not conn.autocommit:
                    conn.commit()
        except (psycopg.Error, OSError) as exc:
            log.warning("notify_failed", error=str(exc))

    def close(self) -> None:
        """Let the writes in flight finish, send a pending wake-up now, and close the pool if
        the writer owns it. Writing afterwards raises ``InboxError``."""
        self._closed = True
        self._groups.drain(timeout=self._pool.timeout)
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
