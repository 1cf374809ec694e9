"""``HandlerDeadline``: one lazily re-armed timer limits each of a batch's async handlers.

The unit tests run it on asyncio alone; the last test runs a real worker on PostgreSQL, where
a slow handler after many quick ones must be cut at its own limit (the timer, armed for the
first handler, re-arms for the one running when it fires).
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from processors import Event, Router
from processors._running.deadline import HandlerDeadline
from tests.processors._support import (
    NO_RETRY_SOON,
    attempt_outcomes,
    create_business_table,
    run_worker_until,
    settings,
    write_events,
)


def test_a_handler_past_its_time_is_cancelled_and_reported_expired() -> None:
    async def main() -> list[str]:
        deadline = HandlerDeadline()
        with pytest.raises(HandlerDeadline.Expired) as expired, deadline.running(0.05):
            await asyncio.Event().wait()  # never set: only the deadline ends it
        assert isinstance(expired.value.__cause__, asyncio.CancelledError)
        # The cancel was taken back: the task goes on and can await again.
        await asyncio.sleep(0)
        task = asyncio.current_task()
        assert task is not None
        deadline.close()
        return task.cancelling()

    assert asyncio.run(main()) == 0


def test_a_shorter_limit_after_a_longer_one_cuts_at_its_own_time() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        deadline = HandlerDeadline()
        with deadline.running(30):
            await asyncio.sleep(0)
        started = loop.time()
        with pytest.raises(HandlerDeadline.Expired), deadline.running(0.1):
            await asyncio.sleep(5)
        deadline.close()
        return loop.time() - started

    assert asyncio.run(main()) < 1


def test_quick_handlers_are_not_cut_and_a_later_slow_one_is_cut_at_its_own_limit() -> None:
    async def main() -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        deadline = HandlerDeadline()
        quick = 0
        # Quick handlers for longer than the limit: the timer armed for the first fires
        # while a later one runs, and must not cut it.
        started = loop.time()
        while loop.time() - started < 0.3:
            with deadline.running(0.1):
                await asyncio.sleep(0.01)
            quick += 1
        slow_started = loop.time()
        with pytest.raises(HandlerDeadline.Expired), deadline.running(0.1):
            await asyncio.sleep(5)
        deadline.close()
        return quick, loop.time() - slow_started

    quick, slow_took = asyncio.run(main())
    assert quick >= 5
    # Cut at its own 0.1 s, not at the first handler's due time (long past) nor never.
    assert 0.09 <= slow_took < 2.0


def test_a_handlers_own_timeout_error_and_outside_cancels_are_left_alone() -> None:
    async def own_timeout() -> None:
        deadline = HandlerDeadline()
        try:
            with deadline.running(10):
                raise TimeoutError("the handler's own")
        finally:
            deadline.close()

    with pytest.raises(TimeoutError, match="the handler's own"):
        asyncio.run(own_timeout())

    async def cancelled_from_outside() -> str:
        entered = asyncio.Event()

        async def handler_task() -> None:
            deadline = HandlerDeadline()
            try:
                with deadline.running(10):
                    entered.set()
                    await asyncio.Event().wait()  # only the outside cancel ends it
            finally:
                deadline.close()

        task = asyncio.create_task(handler_task())
        await entered.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"  # a shutdown's cancel is not the handler's timeout
        return "not cancelled"

    assert asyncio.run(cancelled_from_outside()) == "cancelled"


def test_a_closed_deadline_leaves_no_timer_behind() -> None:
    async def main() -> int:
        deadline = HandlerDeadline()
        with deadline.running(0.05):
            pass
        deadline.close()
        # Past the due time: a timer left behind would cancel this sleep.
        await asyncio.sleep(0.1)
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    assert asyncio.run(main()) == 0


def test_a_slow_handler_late_in_a_batch_of_quick_ones_times_out_alone(db_url: str) -> None:
    create_business_table(db_url)
    ids = write_events(db_url, 40)  # all in one batch (the default batch holds 256)
    slow = ids[-1]
    router = Router()

    @router.on("shop", timeout_seconds=1.0)
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        if event.id == slow:
            await asyncio.sleep(30)
        else:
            # 39 x 30 ms: the batch outlives the first handler's limit before the slow one.
            await asyncio.sleep(0.03)
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])

    run_worker_until(
        db_url,
        router,
        lambda: len(attempt_outcomes(db_url)) == len(ids),
        worker_settings=settings(**NO_RETRY_SOON),
    )
    outcomes = attempt_outcomes(db_url)
    assert outcomes.pop(slow) == [("failed", "HandlerTimeoutError")]
    assert outcomes == {i: [("processed", None)] for i in ids if i != slow}
