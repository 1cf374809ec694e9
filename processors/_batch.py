"""Running the handlers of one claimed batch, each in a SAVEPOINT of the claim transaction.

The result is a list of decisions; nothing here writes outcomes (the store does, in one
statement) or commits (the worker does, once per batch).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
import psycopg
import structlog

from processors._decide import (
    Decision,
    HandlerTimeoutError,
    NoRouteError,
    Policy,
    decide,
    decide_crashed,
    decide_released,
    decide_skipped,
)
from processors._event import Event
from processors._router import Route, Router
from processors._store import ClaimedEvent

__all__ = ["BatchRunner"]

log = structlog.get_logger("processors.worker")

# One round trip per event for the savepoint: the previous event's savepoint is released
# and the next one taken in a single simple-protocol message. The last one is never
# released: COMMIT keeps what it holds.
SAVEPOINT = "savepoint inbox_handler"
NEXT_SAVEPOINT = "release savepoint inbox_handler; savepoint inbox_handler"
ROLLBACK_TO_SAVEPOINT = "rollback to savepoint inbox_handler"


def _now() -> datetime:
    return datetime.now(UTC)


class BatchRunner:
    def __init__(
        self,
        router: Router,
        policy: Policy,
        *,
        handler_timeout_seconds: float,
        worker: str,
        rng: random.Random | None = None,
    ) -> None:
        self._router = router
        self._policy = policy
        self._timeout = handler_timeout_seconds
        self._worker = worker
        self._rng = rng or random.Random()
        self._savepoint_taken = False

    async def run(
        self,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
        batch: Sequence[ClaimedEvent],
        *,
        should_stop: Callable[[], bool],
        deadline: float,
    ) -> list[Decision]:
        """Run each event's handler; events not started by ``deadline`` (monotonic) or after
        a stop request are released unrun, so one slow batch cannot hold its locks long."""
        decisions: list[Decision] = []
        self._savepoint_taken = False
        for item in batch:
            if should_stop() or time.monotonic() > deadline:
                decisions.append(decide_released(item.claimed, now=_now()))
                continue
            decisions.append(await self._run_one(conn, sync_conn, item))
        return decisions

    async def _take_savepoint(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(NEXT_SAVEPOINT if self._savepoint_taken else SAVEPOINT)
        self._savepoint_taken = True

    async def _run_one(
        self,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
        item: ClaimedEvent,
    ) -> Decision:
        claimed, event = item.claimed, item.event
        bound = log.bind(
            event_id=event.id,
            source=event.source,
            type=event.type,
            attempt=event.attempt,
            worker=self._worker,
        )
        if claimed.crashes >= self._policy.max_crashes:
            bound.error("event_crashed_dead", crashes=claimed.crashes)
            return decide_crashed(claimed, now=_now())

        route = self._router.resolve(event.source, event.type)
        if route is None:
            reason = f"no handler routed for source {event.source!r}, type {event.type!r}"
            if self._policy.unrouted == "skip":
                bound.warning("event_skipped", reason=reason)
                return decide_skipped(claimed, now=_now(), reason=reason)

        started = _now()
        error: BaseException | None = None
        await self._take_savepoint(conn)
        try:
            if route is None:
                raise NoRouteError(reason)
            await self._call(route, event, conn, sync_conn)
        except Exception as exc:  # noqa: BLE001 - any handler failure is an attempt's outcome
            error = exc
            # If this fails, the connection is gone: the batch rolls back as a whole.
            await conn.execute(ROLLBACK_TO_SAVEPOINT)

        decision = decide(
            claimed,
            policy=self._policy,
            handler=None if route is None else route.name,
            error=error,
            started_at=started,
            finished_at=_now(),
            rng=self._rng,
        )
        if error is None:
            bound.debug("event_processed", handler=decision.handler)
        elif decision.outcome == "retry":
            bound.info("event_retry_requested", after_seconds=decision.delay_seconds)
        elif decision.outcome == "dead":
            bound.error("event_dead", error=f"{decision.error_class}: {decision.error_message}")
        else:
            bound.warning(
                "handler_failed",
                error=f"{decision.error_class}: {decision.error_message}",
                retry_in_seconds=round(decision.delay_seconds, 3),
            )
        return decision

    async def _call(
        self,
        route: Route,
        event: Event,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
    ) -> None:
        timeout = route.timeout_seconds or self._timeout
        if route.is_async:
            # asyncio's timeout, not an anyio cancel scope: asyncio cancels once, which lets
            # psycopg cancel the running query on the server and keep the connection (and
            # so the batch); anyio's level cancellation interrupts that clean-up and psycopg
            # must close the connection. psycopg's async side runs on asyncio only anyway.
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    await route.handler(event, conn)  # type: ignore[misc]  # is_async checked
            except TimeoutError as exc:
                if not deadline.expired():
                    raise  # the handler's own TimeoutError, not our deadline
                raise HandlerTimeoutError(f"handler {route.name} exceeded {timeout:g} s") from exc
            return

        # A thread cannot be cancelled: at the deadline, cancel its query on the server
        # (the usual way a sync handler hangs) and report the attempt as timed out.
        timed_out = threading.Event()

        def on_deadline() -> None:
            timed_out.set()
            sync_conn.cancel_safe()

        timer = threading.Timer(timeout, on_deadline)
        timer.daemon = True
        timer.start()
        try:
            await anyio.to_thread.run_sync(route.handler, event, sync_conn)
        except Exception:
            if timed_out.is_set():
                raise HandlerTimeoutError(f"handler {route.name} exceeded {timeout:g} s") from None
            raise
        finally:
            timer.cancel()
        if timed_out.is_set():
            raise HandlerTimeoutError(f"handler {route.name} exceeded {timeout:g} s")
