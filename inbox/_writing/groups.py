"""Group commit for ``AsyncInboxWriter``: concurrent standalone writes share a statement.

A write joins the queue; while fewer than ``max_in_flight`` group statements run, the queue
is taken as one group (up to ``MAX_GROUP`` writes) and sent as one ``insert_events``
statement and one commit. The queue is taken once the event loop has run what is ready (the
requests whose bodies arrived in the same pass), not by the first write alone: so an idle
writer sends a write at once, and a busy one turns many round trips and WAL flushes into
few, instead of spending its free slots on single writes. Each write still gets its own
result: a write whose key was already taken (a duplicate), or whose key appears twice in the
queue, goes the single way afterwards, which records the delivery; if the group statement
fails, each of its writes goes the single way and meets its own outcome. When the outcome is
unknown (the connection broke), every write of the group gets the error, as a single write
would.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from inbox._core.logs import get_logger
from inbox._writing.plan import INSERT_EVENTS, WriteResult, group_params

__all__ = ["MAX_GROUP", "WriteGroups"]

log = get_logger("inbox.writer")

# Rows per statement: past a few dozen, a larger group saves little and holds its writers'
# acknowledgements longer.
MAX_GROUP = 64

WriteOne = Callable[[dict[str, Any]], Awaitable[WriteResult]]
# The writer's connection for a statement of its own (AsyncInboxWriter._own).
Connection = Callable[[], AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]]


@dataclass(frozen=True, slots=True)
class _Queued:
    params: dict[str, Any]
    future: asyncio.Future[WriteResult]


class WriteGroups:
    def __init__(self, connection: Connection, write_one: WriteOne, max_in_flight: int) -> None:
        self._connection = connection
        self._write_one = write_one
        self._max_in_flight = max_in_flight
        self._queue: deque[_Queued] = deque()
        self._in_flight = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._gathering = False

    async def write(self, params: dict[str, Any]) -> WriteResult:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[WriteResult] = loop.create_future()
        self._queue.append(_Queued(params, future))
        if not self._gathering:
            # Start the groups after the callbacks already ready in this pass of the loop:
            # the writes they make join this one (measured under `inbox serve` at 64
            # connections: singles had cost more CPU than all the groups together).
            self._gathering = True
            loop.call_soon(self._gathered)
        # A caller cancelled while its write waits in the queue leaves nothing behind: the
        # group skips it. Once sent, the write runs to its end in the group's task.
        return await future

    async def drain(self) -> None:
        """Wait for every group in flight (the writer is closing)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _gathered(self) -> None:
        self._gathering = False
        self._start_groups()

    def _start_groups(self) -> None:
        while self._queue and self._in_flight < self._max_in_flight:
            group, later = self._take_group()
            if not group:
                continue
            self._in_flight += 1
            task = asyncio.get_running_loop().create_task(self._run(group, later))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _take_group(self) -> tuple[list[_Queued], list[_Queued]]:
        """The next group, and the writes of it whose key repeats an earlier one's (they go
        the single way once the first has committed)."""
        group: list[_Queued] = []
        later: list[_Queued] = []
        keys: set[tuple[str, str]] = set()
        while self._queue and len(group) < MAX_GROUP:
            queued = self._queue.popleft()
            if queued.future.done():
                continue
            key = (queued.params["source"], queued.params["key"])
            if key in keys:
                later.append(queued)
            else:
                keys.add(key)
                group.append(queued)
        return group, later

    async def _run(self, group: list[_Queued], later: list[_Queued]) -> None:
        try:
            single = await self._send(group, later)
            await asyncio.gather(*(self._run_single(queued) for queued in single))
        except BaseException as exc:
            # Whatever happened, no caller is left waiting: the connection broke with the
            # outcome unknown (each caller gets the error; the provider's retry will find
            # the event if it was committed), or the writer is being torn down.
            for queued in (*group, *later):
                if queued.future.done():
                    continue
                if isinstance(exc, Exception):
                    queued.future.set_exception(exc)
                else:
                    queued.future.cancel()
            if not isinstance(exc, Exception):
                raise

    async def _send(self, group: list[_Queued], later: list[_Queued]) -> list[_Queued]:
        """Send the group; return the writes that go singly. The slot is free again before
        they go, so a storm of duplicates cannot hold every slot."""
        try:
            if len(group) == 1:
                return [*group, *later]
            return [*await self._insert_group(group), *later]
        finally:
            self._in_flight -= 1
            self._start_groups()

    async def _insert_group(self, group: list[_Queued]) -> list[_Queued]:
        """Send the group as one statement and commit; resolve the writes it inserted and
        return the others. Raises when the outcome is unknown."""
        try:
            async with self._connection() as conn:
                cursor = conn.cursor(row_factory=tuple_row)
                await cursor.execute(INSERT_EVENTS, group_params([q.params for q in group]))
                rows = await cursor.fetchall()
                if not conn.autocommit:
                    await conn.commit()
        except psycopg.Error as exc:
            if exc.sqlstate is None:
                raise  # no answer from the server (or no connection): nothing is known
            # The server refused the statement and rolled it back: each write retries alone
            # and meets its own outcome.
            log.info("write_group_fell_back", writes=len(group), error=f"{exc.sqlstate}: {exc}")
            return group
        not_inserted = []
        for queued, (_, event_id) in zip(group, rows, strict=True):
            if event_id is None:
                not_inserted.append(queued)
            elif not queued.future.done():
                queued.future.set_result(WriteResult(event_id=int(event_id), is_new=True))
        return not_inserted

    async def _run_single(self, queued: _Queued) -> None:
        if queued.future.done():
            return  # its caller gave up (cancelled) before it was sent: nothing to write
        try:
            result = await self._write_one(queued.params)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it
            if not queued.future.done():
                queued.future.set_exception(exc)
            return
        if not queued.future.done():
            queued.future.set_result(result)
