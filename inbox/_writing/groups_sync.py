"""Group commit for ``InboxWriter`` (``inbox._writing.groups``), in the callers' threads.

No thread of its own: a caller that finds a group slot free leads. It takes the queue as a
group (itself included), sends it, and on its way out hands the slot to the first write
still waiting, whose thread then leads the next group: so the writes that arrived while a
group was on its way leave together, and no caller serves others for longer than one group.
A group of one (an idle writer) is sent the single way at once by its leader. The writes a
group leaves (duplicates, repeated keys, a refused group) go the single way in their own
callers' threads, after the slot is handed on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, LiteralString

import psycopg

from inbox._writing.groups import GroupQueue, fail, falls_back, resolve, statement
from inbox._writing.plan import INSERT_EVENTS, WriteResult

__all__ = ["SyncWriteGroups"]

WriteOne = Callable[[dict[str, Any]], WriteResult]
# One statement of the writer's own, committed: its rows (InboxWriter._fetch_own).
Fetch = Callable[[LiteralString, dict[str, Any]], list[tuple[Any, ...]]]


class _Waiter:
    """One caller's write, and what its thread waits for: its outcome, the lead of the next
    group, or the word to write singly."""

    __slots__ = ("_done", "_error", "_event", "_result", "lead", "params", "single")

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self._event = threading.Event()
        self._done = False
        self._result: WriteResult | None = None
        self._error: BaseException | None = None
        self.lead = False
        self.single = False

    def done(self) -> bool:
        return self._done

    def set_result(self, result: WriteResult) -> None:
        self._result, self._done = result, True
        self._event.set()

    def set_exception(self, exc: BaseException) -> None:
        self._error, self._done = exc, True
        self._event.set()

    def wake(self) -> None:
        self._event.set()

    def wait(self) -> None:
        # Cleared after waking: whatever is set from here on is seen by the caller's next
        # look at the flags, or wakes its next wait.
        self._event.wait()
        self._event.clear()

    def outcome(self) -> WriteResult:
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class SyncWriteGroups:
    def __init__(self, fetch: Fetch, write_one: WriteOne, max_in_flight: int) -> None:
        self._fetch = fetch
        self._write_one = write_one
        self._groups = GroupQueue(max_in_flight)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def write(self, params: dict[str, Any]) -> WriteResult:
        me = _Waiter(params)
        with self._lock:
            self._groups.queue.append(me)
            if self._groups.slot_free():
                self._groups.in_flight += 1
                me.lead = True
        while True:
            # The lead is looked at first: a slot handed over is always used or given back.
            if me.lead:
                me.lead = False
                self._lead()
            elif me.done():
                return me.outcome()
            elif me.single:
                return self._write_one(params)
            else:
                me.wait()

    def drain(self, timeout: float) -> bool:
        """Wait until no group is in flight (the writer is closing); False on timeout."""
        with self._idle:
            return self._idle.wait_for(
                lambda: self._groups.in_flight == 0 and not self._groups.queue, timeout
            )

    def _lead(self) -> None:
        """Send the next group on the slot this thread holds, then hand the slot on."""
        with self._lock:
            group, later = self._groups.take()
        single: list[_Waiter] = []
        try:
            if len(group) == 1:
                self._write_inline(group[0])
                single = later
            elif group:
                single = [*self._insert_group(group), *later]
        except BaseException as exc:
            fail([*group, *later], exc if isinstance(exc, Exception) else _interrupted(exc))
            raise
        finally:
            self._hand_on()
        for waiter in single:
            waiter.single = True
            waiter.wake()

    def _write_inline(self, waiter: _Waiter) -> None:
        try:
            result = self._write_one(waiter.params)
        except Exception as exc:  # noqa: BLE001 - handed to its caller, who raises it
            waiter.set_exception(exc)
            return
        waiter.set_result(result)

    def _hand_on(self) -> None:
        with self._lock:
            for waiter in self._groups.queue:
                if not waiter.done() and not waiter.lead:
                    waiter.lead = True
                    break
            else:
                self._groups.in_flight -= 1
                self._idle.notify_all()
                return
        waiter.wake()

    def _insert_group(self, group: list[_Waiter]) -> list[_Waiter]:
        """Send the group as one statement and commit; resolve the writes it inserted and
        return the others. Raises when the outcome is unknown."""
        try:
            rows = self._fetch(INSERT_EVENTS, statement(group))
        except psycopg.Error as exc:
            if not falls_back(exc, len(group)):
                raise
            return group
        return resolve(group, rows)


def _interrupted(exc: BaseException) -> Exception:
    from inbox._core.errors import DatabaseUnavailableError

    return DatabaseUnavailableError(f"the write's group was interrupted ({type(exc).__name__})")
