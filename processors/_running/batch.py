"""Running the handlers of one claimed batch inside the claim transaction.

By default the batch's handlers share one SAVEPOINT (one round trip per batch). If a handler
fails, the batch rolls back to it: the failure is decided, and the other events run again, each
in a savepoint of its own, so one event's failure never takes another's writes with it. With
``savepoints = "event"`` every event gets its own savepoint from the start.

Under the shared savepoint, consecutive async handlers run in one psycopg pipeline: their
statements go out without waiting for results, and one sync at the end (or before a sync
handler, which must never meet an open pipeline) collects them. A server error then surfaces
at a later statement or at the sync, in whichever handler happens to wait, so it names no
handler: the batch is undone and every handler that ran runs again isolated, where the error
is charged to the handler whose statement it is. A handler that reads waits for its results
(a fetch syncs): correct, one round trip. A handler's own exception (``Retry`` included) after
a clean sync is its own, as without a pipeline; a timeout in a pipeline may be a wait on
another handler's statement, so it is treated like a server error.

A batch handler (``Router.on_batch``) is called once in the shared pass with every event of
the batch routed to it from one source. Its failure belongs to no one event: the pass is
undone like a pipeline's failure, and in the isolated re-run it is called once per event,
where the failure is charged to the event that causes it.

The result is a list of decisions; nothing here writes outcomes (the store does, in one
statement) or commits (the worker does, once per batch).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import pq

from inbox._core.logs import get_logger
from processors._model.claimed import ClaimedEvent
from processors._model.decide import (
    Decision,
    Policy,
    decide,
    decide_crashed,
    decide_released,
    decide_skipped,
)
from processors._model.errors import (
    HandlerLeftTransactionAbortedError,
    HandlerTimeoutError,
    NoRouteError,
)
from processors._model.router import Route, Router
from processors._running.deadline import HandlerDeadline
from processors._running.invoke import call_handler
from processors._running.pipeline import BatchPipeline
from processors._running.savepoints import (
    BATCH_SAVEPOINT,
    EVENT_SAVEPOINT,
    MAX_ISOLATED,
    NEXT_EVENT_SAVEPOINT,
    UNDO_BATCH,
    UNDO_EVENT,
    SavepointMode,
)
from processors._running.settled_log import event_log, log_failure
from processors._running.tracing import handler_span

__all__ = ["BatchRunner"]

log = get_logger("processors.worker")


def _now() -> datetime:
    return datetime.now(UTC)


def _left_aborted(handler: str) -> HandlerLeftTransactionAbortedError:
    return HandlerLeftTransactionAbortedError(
        f"handler {handler} returned, but a statement of its failed and it went on: the"
        " transaction is aborted (let database errors propagate)"
    )


class _Undo(Exception):
    """The shared savepoint must be undone: ``index``'s handler failed with ``decision``, or
    (both None) a statement of the batch's pipeline, or a batch handler, failed and which
    event's doing it was is not known."""

    def __init__(
        self, index: int | None = None, decision: Decision | None = None, timeout: float = 0.0
    ) -> None:
        self.index = index
        self.decision = decision
        # Unknown whose: the longest timeout of the pipelined handlers, one of which runs
        # again and may take all of it.
        self.timeout = timeout


class BatchRunner:
    # The time limit of the async handlers of the pass running now (one per pass: _run_all).
    _deadline: HandlerDeadline

    def __init__(
        self,
        router: Router,
        policy: Policy,
        *,
        handler_timeout_seconds: float,
        worker: str,
        savepoints: SavepointMode = "batch",
        rng: random.Random | None = None,
    ) -> None:
        self._router = router
        self._policy = policy
        self._timeout = handler_timeout_seconds
        self._worker = worker
        self._savepoints = savepoints
        self._rng = rng or random.Random()
        self._event_savepoint_taken = False

    async def run(
        self,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
        batch: Sequence[ClaimedEvent],
        *,
        should_stop: Callable[[], bool],
        deadline: float,
        batch_savepoint_taken: bool = False,
    ) -> list[Decision]:
        """Run each event's handler; events not started by ``deadline`` (monotonic) or after
        a stop request are released unrun, so one slow batch cannot hold its locks long.
        ``batch_savepoint_taken``: the claim already ran ``BATCH_SAVEPOINT``."""
        decisions: list[Decision | None] = [None] * len(batch)
        self._event_savepoint_taken = False
        if self._savepoints == "batch":
            shared_started = time.monotonic()
            try:
                if not batch_savepoint_taken:
                    await conn.execute(BATCH_SAVEPOINT)
                await self._run_all(
                    conn, sync_conn, batch, decisions, should_stop, deadline, shared=True
                )
                return [d for d in decisions if d is not None]
            except _Undo as undo:
                # If this fails, the connection is gone: the batch rolls back as a whole.
                await conn.execute(UNDO_BATCH)
                # Decisions taken without running a handler stand; handlers that ran lost
                # their writes with the savepoint and run again, isolated this time.
                undone_seconds = 0.0
                for i, decision in enumerate(decisions):
                    if decision is not None and decision.handler is not None:
                        undone_seconds += (
                            decision.finished_at - decision.started_at
                        ).total_seconds()
                        decisions[i] = None
                # A failure can come at or past the batch's deadline (a handler that timed
                # out always does): the events it undid get the time they took once more,
                # twice over, up to one handler timeout, instead of being released unrun.
                if undo.index is not None and undo.decision is not None:
                    decisions[undo.index] = undo.decision
                    rerun_budget = min(self._timeout, 2 * undone_seconds + 1.0)
                else:
                    # A pipeline's failure: the handlers' statements ran on the server after
                    # their handlers returned, so the pass's wall time is what was undone;
                    # the handler whose statement failed runs again too, and may take its
                    # whole timeout (a slow statement that timed the sync out will).
                    undone_seconds = time.monotonic() - shared_started
                    rerun_budget = min(self._timeout, 2 * undone_seconds + 1.0) + undo.timeout
                deadline = max(deadline, time.monotonic() + rerun_budget)
                log.info(
                    "batch_rerun_isolated",
                    worker=self._worker,
                    failed_event_id=None if undo.decision is None else undo.decision.event_id,
                    undone_seconds=round(undone_seconds, 3),
                )
        await self._run_all(conn, sync_conn, batch, decisions, should_stop, deadline, shared=False)
        return [d for d in decisions if d is not None]

    async def _run_all(
        self,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
        batch: Sequence[ClaimedEvent],
        decisions: list[Decision | None],
        should_stop: Callable[[], bool],
        deadline: float,
        *,
        shared: bool,
    ) -> None:
        """Decide every event that has no decision yet."""
        pipe = BatchPipeline(conn) if shared else None
        isolated = 0
        self._deadline = HandlerDeadline()
        try:
            for i, item in enumerate(batch):
                if decisions[i] is not None:
                    continue
                claimed = item.claimed
                if claimed.crashes >= self._policy.max_crashes:
                    # Before the deadline check: a poison pill is never released to crash again.
                    event_log(item.event, self._worker).error(
                        "event_crashed_dead", crashes=claimed.crashes
                    )
                    decisions[i] = decide_crashed(claimed, now=_now())
                elif should_stop() or time.monotonic() > deadline or isolated >= MAX_ISOLATED:
                    decisions[i] = decide_released(claimed, now=_now())
                else:
                    isolated += not shared
                    route = self._router.resolve(item.event.source, item.event.type)
                    if pipe is not None and route is not None and route.batch:
                        members = self._members(batch, decisions, i, route)
                        group = [batch[j] for j in members]
                        ran = await self._run_group(conn, sync_conn, group, route, pipe)
                        for j, decision in zip(members, ran, strict=True):
                            decisions[j] = decision
                    else:
                        decisions[i] = await self._run_one(conn, sync_conn, item, i, route, pipe)
        finally:
            self._deadline.close()
        if pipe is not None and not await pipe.close():
            raise _Undo(timeout=pipe.longest_timeout)

    def _members(
        self,
        batch: Sequence[ClaimedEvent],
        decisions: list[Decision | None],
        first: int,
        route: Route,
    ) -> list[int]:
        """The events a batch handler's call takes, from ``first`` on: undecided, of
        ``first``'s source, routed to ``route``, and not due to be dead as crashed."""
        source = batch[first].event.source
        members = [first]
        for j in range(first + 1, len(batch)):
            event = batch[j].event
            if (
                decisions[j] is None
                and event.source == source
                and batch[j].claimed.crashes < self._policy.max_crashes
                and self._router.resolve(source, event.type) is route
            ):
                members.append(j)
        return members

    async def _run_group(
        self,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
        group: Sequence[ClaimedEvent],
        route: Route,
        pipe: BatchPipeline,
    ) -> list[Decision]:
        """One call of a batch handler in the shared savepoint. A failure is not charged
        here: whose event caused it is not known, so the pass is undone and re-run isolated
        (each event alone, which charges it)."""
        timeout = route.timeout_seconds or self._timeout
        if route.is_async:
            await pipe.open(timeout)
        elif not await pipe.close():
            raise _Undo(timeout=pipe.longest_timeout)
        started = _now()
        try:
            with handler_span(group, route.name):
                await call_handler(
                    route,
                    [i.event for i in group],
                    conn,
                    sync_conn,
                    limit_seconds=timeout,
                    deadline=self._deadline,
                )
                if not route.is_async and (
                    conn.pgconn.transaction_status == pq.TransactionStatus.INERROR
                ):
                    raise _left_aborted(route.name)
        except Exception as exc:  # any handler failure undoes the pass
            if route.is_async:
                await pipe.close()
            log.info(
                "batch_handler_failed",
                worker=self._worker,
                handler=route.name,
                events=len(group),
                error=f"{type(exc).__name__}: {exc}",
            )
            raise _Undo(timeout=max(timeout, pipe.longest_timeout)) from exc
        return [self._decide(item, route.name, None, started) for item in group]

    async def _run_one(
        self,
        conn: psycopg.AsyncConnection[Any],
        sync_conn: psycopg.Connection[Any],
        item: ClaimedEvent,
        index: int,
        route: Route | None,
        pipe: BatchPipeline | None,
    ) -> Decision:
        """Run one event's handler (``route``'s, a batch handler's with a list of one): in
        the shared savepoint (``pipe``, whose pipeline carries the async handlers'
        statements), or in a savepoint of its own (None)."""
        shared = pipe is not None
        claimed, event = item.claimed, item.event
        if route is None:
            reason = f"no handler routed for source {event.source!r}, type {event.type!r}"
            if self._policy.unrouted == "skip":
                event_log(event, self._worker).warning("event_skipped", reason=reason)
                return decide_skipped(claimed, now=_now(), reason=reason)
            # No handler ran, so there is nothing to undo.
            decision = self._decide(item, None, NoRouteError(reason), _now())
            log_failure(event, decision, self._worker)
            return decision

        timeout = route.timeout_seconds or self._timeout
        pipelined = pipe is not None and route.is_async
        if pipe is not None:
            if route.is_async:
                await pipe.open(timeout)
            elif not await pipe.close():
                raise _Undo(timeout=pipe.longest_timeout)
        started = _now()
        error: BaseException | None = None
        if not shared:
            await conn.execute(
                NEXT_EVENT_SAVEPOINT if self._event_savepoint_taken else EVENT_SAVEPOINT
            )
            self._event_savepoint_taken = True
        try:
            with handler_span((item,), route.name):
                await call_handler(
                    route,
                    [event] if route.batch else event,
                    conn,
                    sync_conn,
                    limit_seconds=timeout,
                    deadline=self._deadline,
                )
                # (In a pipeline the status is known at the sync: BatchPipeline.close checks it.)
                if not pipelined and conn.pgconn.transaction_status == pq.TransactionStatus.INERROR:
                    raise _left_aborted(route.name)
        except Exception as exc:  # noqa: BLE001 - any handler failure is an attempt's outcome
            error = exc
            if not shared:
                # If this fails, the connection is gone: the batch rolls back as a whole.
                await conn.execute(UNDO_EVENT)
        if error is not None and pipe is not None and pipelined:
            # The undo cannot run in a pipeline. A server error, or a timeout (perhaps a wait
            # on another handler's statement), may not be this handler's: re-run them all.
            clean = await pipe.close()
            if not clean or isinstance(error, psycopg.Error | HandlerTimeoutError):
                raise _Undo(timeout=pipe.longest_timeout)

        decision = self._decide(item, route.name, error, started)
        if error is None:
            # Logged by the worker once the batch has committed (log_events).
            return decision
        log_failure(event, decision, self._worker)
        if shared:
            raise _Undo(index, decision)
        return decision

    def _decide(
        self,
        item: ClaimedEvent,
        handler: str | None,
        error: BaseException | None,
        started: datetime,
    ) -> Decision:
        return decide(
            item.claimed,
            policy=self._policy,
            handler=handler,
            error=error,
            started_at=started,
            finished_at=_now(),
            rng=self._rng,
        )
