"""Group commit for ``AsyncInboxWriter`` (``inbox._writing.groups``), on the event loop.

The queue is taken once the event loop has run what is ready (the requests whose bodies
arrived in the same pass), not by the first write alone: the writes those callbacks make
join it, so a busy writer does not spend its free slots on single writes. Each group runs
in a task of its own; the writes it leaves go the single way, each in its own task, once the
group's slot is free again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, LiteralString

import psycopg

from inbox._writing.groups import GroupQueue, fail, falls_back, resolve, statement
from inbox._writing.plan import INSERT_EVENTS, WriteResult

__all__ = ["WriteGroups"]

WriteOne = Callable[[dict[str, Any]], Awaitable[WriteResult]]
# One statement of the writer's own, committed: its rows (AsyncInboxWriter._fetch_own).
Fetch = Callable[[LiteralString, dict[str, Any]], Awaitable[list[tuple[Any, ...]]]]


@dataclass(frozen=True, slots=True)
class _Queued:
    params: dict[str, Any]
    future: asyncio.Future[WriteResult]

    def done(self) -> bool:
        return self.future.done()

    def set_result(self, result: WriteResult) -> None:
        self.future.set_result(result)

    def set_exception(self, exc: BaseException) -> None:
        self.future.set_exception(exc)


class WriteGroups:
    def __init__(self, fetch: Fetch, write_one: WriteOne, max_in_flight: int) -> None:
        self._fetch = fetch
        self._write_one = write_one
        self._groups = GroupQueue(max_in_flight)
        self._tasks: set[asyncio.Task[None]] = set()
        self._gathering = False

    async def write(self, params: dict[str, Any]) -> WriteResult:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[WriteResult] = loop.create_future()
        self._groups.queue.append(_Queued(params, future))
        if not self._gathering:
            # Start the groups after the callbacks already ready in this pass of the loop:
            # the writes they make join this one rather than go alone, each with a
            # statement and a commit of its own.
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
        groups = self._groups
        while groups.queue and groups.slot_free():
            group, later = groups.take()
            if not group:
                continue
            groups.in_flight += 1
            task = asyncio.get_running_loop().create_task(self._run(group, later))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, group: list[_Queued], later: list[_Queued]) -> None:
        try:
            single = await self._send(group, later)
            await asyncio.gather(*(self._run_single(queued) for queued in single))
        except BaseException as exc:
            # Whatever happened, no caller is left waiting: the connection broke with the
            # outcome unknown (each caller gets the error; the provider's retry will find
            # the event if it was committed), or the writer is being torn down.
            if isinstance(exc, Exception):
                fail([*group, *later], exc)
            else:
                for queued in (*group, *later):
                    if not queued.done():
                        queued.future.cancel()
                raise

    async def _send(self, group: list[_Queued], later: list[_Queued]) -> list[_Queued]:
        """Send the group; return the writes that go singly. The slot is free again before
        they go, so a storm of duplicates cannot hold every slot."""
        try:
            if len(group) == 1:
                return [*group, *later]
            return [*await self._insert_group(group), *later]
        finally:
            self._groups.in_flight -= 1
            self._start_groups()

    async def _insert_group(self, group: list[_Queued]) -> list[_Queued]:
        """Send the group as one statement and commit; resolve the writes it inserted and
        return the others. Raises when the outcome is unknown."""
        try:
            rows = await self._fetch(INSERT_EVENTS, statement(group))
        except psycopg.Error as exc:
            if not falls_back(exc, len(group)):
                raise
            return group
        return resolve(group, rows)

    async def _run_single(self, queued: _Queued) -> None:
        if queued.done():
            return  # its caller gave up (cancelled) before it was sent: nothing to write
        try:
            result = await self._write_one(queued.params)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it
            fail([queued], exc)
            return
        if not queued.done():
            queued.set_result(result)
