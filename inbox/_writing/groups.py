"""Group commit: concurrent standalone writes share a statement and a commit.

A write joins the queue; while fewer than ``max_in_flight`` group statements run, the queue
is taken as one group (up to ``MAX_GROUP`` writes) and sent as one ``insert_events``
statement and one commit. An idle writer sends a write at once (a group of one goes the
single way); a busy one turns many round trips and WAL flushes into few. Each write still
gets its own result: a write whose key was already taken (a duplicate), or whose key
appears twice in the queue, goes the single way afterwards, which records the delivery; if
the group statement fails, each of its writes goes the single way and meets its own
outcome. When the outcome is unknown (the connection broke), every write of the group gets
the error, as a single write would.

``GroupQueue`` is that logic, free of I/O and of any event loop or thread. Its two shells
only wait: ``inbox._writing.groups_async`` (``AsyncInboxWriter``: tasks on the event loop)
and ``inbox._writing.groups_sync`` (``InboxWriter``: the callers' own threads).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import psycopg

from inbox._core.logs import get_logger
from inbox._writing.plan import WriteResult, group_params

__all__ = ["MAX_GROUP", "GroupQueue", "Waiter", "fail", "falls_back", "resolve", "statement"]

log = get_logger("inbox.writer")

# Rows per statement: past a few dozen, a larger group saves little and holds its writers'
# acknowledgements longer.
MAX_GROUP = 64


class Waiter(Protocol):
    """A queued write: its parameters and where its caller waits (an asyncio future, or a
    thread's waiter)."""

    @property
    def params(self) -> dict[str, Any]: ...

    def done(self) -> bool: ...

    def set_result(self, result: WriteResult) -> None: ...

    def set_exception(self, exc: BaseException) -> None: ...


W = TypeVar("W", bound=Waiter)


class GroupQueue:
    """The queue of writes and the groups in flight; the shells hold it under their own
    exclusion (the event loop's single thread, or a lock)."""

    def __init__(self, max_in_flight: int) -> None:
        self.max_in_flight = max_in_flight
        self.queue: deque[Any] = deque()
        self.in_flight = 0

    def slot_free(self) -> bool:
        return self.in_flight < self.max_in_flight

    def take(self) -> tuple[list[Any], list[Any]]:
        """The next group, and the writes of it whose key repeats an earlier one's (they go
        the single way once the first has committed). A caller that gave up is skipped."""
        group: list[Any] = []
        later: list[Any] = []
        keys: set[tuple[str, str]] = set()
        while self.queue and len(group) < MAX_GROUP:
            queued = self.queue.popleft()
            if queued.done():
                continue
            key = (queued.params["source"], queued.params["key"])
            if key in keys:
                later.append(queued)
            else:
                keys.add(key)
                group.append(queued)
        return group, later

    def next_waiting(self) -> Any | None:
        """The first queued write whose caller still waits."""
        while self.queue and self.queue[0].done():
            self.queue.popleft()
        return self.queue[0] if self.queue else None


def statement(group: Sequence[Waiter]) -> dict[str, list[Any]]:
    """The group's ``insert_events`` parameters."""
    return group_params([q.params for q in group])


def falls_back(exc: psycopg.Error, writes: int) -> bool:
    """Whether a failed group statement sends its writes the single way: the server refused
    it and rolled it back (each write then meets its own outcome). Without an answer (no
    SQLSTATE) nothing is known, and every write gets the error."""
    if exc.sqlstate is None:
        return False
    log.info("write_group_fell_back", writes=writes, error=f"{exc.sqlstate}: {exc}")
    return True


def resolve(group: Sequence[W], rows: Sequence[tuple[Any, ...]]) -> list[W]:
    """Give each write the group inserted its result; return the others (single way)."""
    not_inserted = []
    for queued, (_, event_id) in zip(group, rows, strict=True):
        if event_id is None:
            not_inserted.append(queued)
        elif not queued.done():
            queued.set_result(WriteResult(event_id=int(event_id), is_new=True))
    return not_inserted


def fail(writes: Sequence[Waiter], exc: BaseException) -> None:
    """Give every write still waiting the error."""
    for queued in writes:
        if not queued.done():
            queued.set_exception(exc)
