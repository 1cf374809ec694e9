"""``AsyncInboxWriter``: the async twin of ``InboxWriter`` (Starlette, FastAPI, ...).

The logic lives in ``inbox._writing.base`` and ``inbox._writing.plan``; this shell only awaits
the I/O, and group-commits standalone writes (``inbox._writing.groups``). Like
``InboxWriter``, it imports the driver (and asyncio) when it is used, not when it is
imported: a sync host's ``import inbox`` pays for neither.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, LiteralString

from inbox._core.database.db import translate_driver_errors
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
    import asyncio

    import psycopg
    from psycopg_pool import AsyncConnectionPool

    from inbox._core.database.pool_care import AsyncPoolCare

__all__ = ["AsyncInboxWriter"]


class AsyncInboxWriter(
    WriterBase[
        "AsyncConnectionPool",
        "psycopg.AsyncConnection[Any]",
        Coroutine[Any, Any, WriteResult],
    ]
):
    """Appends raw webhooks to the inbox log from async code; see ``InboxWriter``.

    Use it as ``async with AsyncInboxWriter(dsn) as w`` or call ``await w.open()`` first
    (the first write opens it too). ``await w.write(...)``: ``write`` returns a coroutine.

    Standalone writes are group-committed (``inbox._writing.groups``). Of
    ``groups_in_flight`` (see ``WriterBase``), 1 makes fewer, larger groups, the faster
    choice when the event loop is the bottleneck (the receiver app, which verifies every
    request on the same loop, uses 1).
    """

    # Set when the writer makes its own pool: prompt reconnection after a server restart.
    _care: AsyncPoolCare | None = None

    def _make_pool(self, dsn: str, options: dict[str, Any]) -> AsyncConnectionPool:
        from psycopg_pool import AsyncConnectionPool

        from inbox._core.database.pool_care import AsyncPoolCare

        self._care = AsyncPoolCare(dsn, options["kwargs"])
        pool = AsyncConnectionPool(dsn, open=False, **options, **self._care.options())
        self._care.attach(pool)
        return pool

    def _init_io(self) -> None:
        from inbox._writing.groups_async import WriteGroups

        self._opened = not self._owns_pool
        self._trailing: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # Group statements in flight: one makes fewer, larger groups, which pays where the
        # event loop is short of CPU (`inbox serve`); two let one commit while the next
        # gathers, which pays where the CPU is idle (the library's own writers). Figures:
        # benchmarks/ANALYSIS.md, "Ingest through the library" and "Ingest through HTTP".
        self._groups = WriteGroups(
            self._fetch_own,
            self._write_one,
            max_in_flight=max(1, min(self._groups_wanted, self._pool.max_size // 2)),
        )

    async def open(self) -> None:
        """Open the pool the writer owns (the first write does it too)."""
        if not self._opened:
            with translate_driver_errors("opening the writer's pool"):
                await self._pool.open()
            self._opened = True

    async def _write(
        self, request: WriteRequest, conn: psycopg.AsyncConnection[Any] | None
    ) -> WriteResult:
        plan = self._plan(request, conn)
        with translate_driver_errors(f"writing {request.source}:{request.key}"):
            at = self._partition_wanted(plan)
            if at is not None:
                await self.open()
                await self._partition_for(at)
            if conn is not None:
                try:
                    result = await self._run(conn, plan.params)
                except Exception as exc:
                    if missing_partition(exc):
                        raise self._no_partition(plan.params) from exc
                    raise
            else:
                await self.open()
                if plan.notifies_in_statement:
                    result = await self._write_one(plan.params)
                else:
                    result = await self._groups.write(plan.params)
        if self._owes_wake_up(plan, result):
            await self._after_commit()
        return result

    async def ping(self) -> None:
        """Check that the database answers and holds the inbox schema (health checks).

        Raises ``DatabaseUnavailableError``, or ``MigrationError`` when the schema is missing.
        """
        if self._care is not None:
            self._care.known_down(self._pool)
        with translate_driver_errors("checking the database"):
            await self.open()
            async with self._pool.connection() as conn:
                await conn.execute(PING)

    async def _write_one(self, params: dict[str, Any]) -> WriteResult:
        """One write on a connection of the pool, committed; when no partition of the log
        holds its receipt time, it is made and the write goes again (see InboxWriter)."""
        try:
            return await self._write_own(params)
        except Exception as exc:
            if not missing_partition(exc):
                raise
        self._partitions.forget()
        await self._partition_for(params["received_at"])
        return await self._write_own(params)

    async def _fetch_own(
        self, query: LiteralString, params: Mapping[str, Any]
    ) -> list[tuple[Any, ...]]:
        """Run one statement on a connection of the pool, committed, and return its rows; behind
        a pooler in one round trip with the transaction's settings (see InboxWriter)."""
        from psycopg.rows import tuple_row

        async with self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=tuple_row)
            if self._prelude is None:
                await cursor.execute(query, params)
            else:
                async with conn.pipeline():
                    await conn.execute(self._prelude)
                    await cursor.execute(query, params)
            rows = await cursor.fetchall()
            if not conn.autocommit:
                await conn.commit()
        return rows

    async def _write_own(self, params: dict[str, Any]) -> WriteResult:
        for query in write_rounds():
            result = read_result(first_row(await self._fetch_own(query, params)))
            if result is not None:
                return result
        raise rounds_exhausted(params)

    async def _partition_for(self, at: Any) -> None:
        row = first_row(await self._fetch_own(PARTITION_FOR, {"at": at}))
        if row is not None:
            self._partitions.add(row[0], row[1])

    async def _run(self, conn: psycopg.AsyncConnection[Any], params: dict[str, Any]) -> WriteResult:
        from psycopg.rows import tuple_row

        # The caller's connection may have any row factory; ours reads tuples.
        cursor = conn.cursor(row_factory=tuple_row)
        for query in write_rounds():
            await cursor.execute(query, params)
            result = read_result(await cursor.fetchone())
            if result is not None:
                return result
        raise rounds_exhausted(params)

    async def _after_commit(self) -> None:
        delay = self._coalescer.after_commit(time.monotonic())
        if delay == 0.0:
            await self._send_notify()
        elif delay is not None:
            import asyncio  # loaded: this runs in its event loop

            self._trailing = asyncio.get_running_loop().call_later(delay, self._start_trailing)

    def _start_trailing(self) -> None:
        import asyncio  # loaded: this runs in its event loop

        task = asyncio.get_running_loop().create_task(self._send_trailing())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send_trailing(self) -> None:
        if self._coalescer.take_trailing(time.monotonic()):
            await self._send_notify()

    async def _send_notify(self) -> None:
        # A hint only: a lost notification costs latency, never an event.
        import psycopg

        try:
            async with self._pool.connection() as conn:
                await conn.execute(NOTIFY_WORK)
                if not conn.autocommit:
                    await conn.commit()
        except (psycopg.Error, OSError) as exc:
            log.warning("notify_failed", error=str(exc))

    async def close(self) -> None:
        """Send a pending wake-up now, and close the pool if the writer owns it."""
        trailing, self._trailing = self._trailing, None
        if trailing is not None:
            trailing.cancel()
        await self._groups.drain()
        await self._send_trailing()  # a no-op unless a trailing notify is still owed
        if self._tasks:
            import asyncio  # loaded: this runs in its event loop

            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._owns_pool and self._opened:
            await self._pool.close()

    async def __aenter__(self) -> AsyncInboxWriter:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
