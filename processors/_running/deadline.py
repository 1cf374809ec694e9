"""``HandlerDeadline``: the time limit of a batch's async handlers, one timer a batch.

``asyncio.timeout`` around each handler makes and cancels a timer handle and looks up the
current task every time, a part of a no-op event's cost that showed (benchmarks/ANALYSIS.md,
"The batch's own Python, and the claim"). Handlers of a batch run one after another in the
claim loop's task, so one lazily re-armed timer serves them all: starting a handler only notes
its due time; the timer, when it fires, cancels the task if the running handler is past its due
time, or sleeps again until it is. A handler that returns in time costs a clock read.

The cancellation is asyncio's, delivered once, like ``asyncio.timeout``'s: psycopg then
cancels the running query on the server and keeps the connection (and so the batch).
"""

from __future__ import annotations

import asyncio

__all__ = ["HandlerDeadline"]


class HandlerDeadline:
    """Use one per batch, from the task that runs its handlers::

    deadline = HandlerDeadline()
    for each handler:
        with deadline.running(seconds):
            await handler(...)
        # raises deadline.Expired when the limit cut it short
    deadline.close()
    """

    class Expired(Exception):
        """The running handler passed its due time and was cancelled."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "HandlerDeadline must be made inside a task"
        self._task = task
        self._timer: asyncio.TimerHandle | None = None
        self._due: float | None = None  # the running handler's due time, None between them
        self._fired = False
        self._cancelling = 0

    def running(self, seconds: float) -> HandlerDeadline:
        self._due = self._loop.time() + seconds
        self._fired = False
        self._cancelling = self._task.cancelling()
        if self._timer is None:
            self._timer = self._loop.call_at(self._due, self._check)
        elif self._due < self._timer.when():
            # A shorter limit than the one the timer was armed for (a route's own
            # timeout_seconds) would only be checked when that timer fires: re-arm earlier.
            self._timer.cancel()
            self._timer = self._loop.call_at(self._due, self._check)
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, *exc_and_tb: object) -> None:
        self._due = None
        if not self._fired:
            return
        self._fired = False
        # Our cancel is taken back; it was ours to turn into Expired only when no one else
        # asked for a cancel meanwhile (as asyncio.timeout decides).
        if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
            raise self.Expired from exc_and_tb[0]  # type: ignore[misc]  # CancelledError

    def close(self) -> None:
        """Stop the timer (the batch's handlers are done)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due = None

    def _check(self) -> None:
        self._timer = None
        due = self._due
        if due is None:
            return  # between handlers: the next one re-arms
        if self._loop.time() >= due:
            self._fired = True
            self._task.cancel()
        else:
            self._timer = self._loop.call_at(due, self._check)
