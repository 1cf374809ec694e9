"""The worker: claim loops that orchestrate claim → handle → settle → commit.

The worker never writes SQL of its own (``WorkStore`` owns every query) and never decides an
outcome (``processors._model.decide`` does). One process runs ``concurrency`` claim loops, each
on one ``ClaimSession`` (``session``), one listener, and its upkeep (``upkeep``); several
processes, on one host or many, cooperate only through SKIP LOCKED.
"""

from __future__ import annotations

import math
import os
import random
import socket
import time
from datetime import UTC, datetime
from typing import Any

import anyio
import psycopg

from inbox._core.config.settings import WorkerSettings
from inbox._core.database.outage import Outage, describe_server
from inbox._core.database.pooler import PoolerMode, PreparedMode, behind_pooler, connect_kwargs
from inbox._core.logs import get_logger
from processors._claiming.cursor import ClaimCursor
from processors._claiming.gate import SuspectGate
from processors._claiming.store import SessionLimits, WorkStore, release_busy
from processors._compat import log_hooks_off
from processors._model.claimed import ClaimedEvent
from processors._model.decide import (
    Policy,
    idle_wait_seconds,
    reconnect_delay,
)
from processors._model.errors import CommitOutcomeUnknownError
from processors._model.router import Router
from processors._rehearsal.requests import RehearsalRequests
from processors._running.batch import BatchRunner
from processors._running.savepoints import BATCH_SAVEPOINT, MAX_ISOLATED
from processors._running.settled_log import log_settled
from processors._worker.health import TICK_SECONDS, WorkerHealth
from processors._worker.listener import Listener, Wakeup
from processors._worker.metrics import WorkerMetrics
from processors._worker.session import ClaimSession, claim_session
from processors._worker.upkeep import Upkeep
from processors._worker.version import code_version

__all__ = ["Worker"]

log = get_logger("processors.worker")

# A batch is one transaction. Under the shared savepoint a batch's size costs no
# subtransactions (after a failure at most MAX_ISOLATED events re-run, each in its own, and
# the rest are released), and a bigger claim spreads the claim, the claim counters, the
# settle and the commit over more events (benchmarks/ANALYSIS.md, "The batch's own Python,
# and the claim"). With savepoints = "event" every event is a subtransaction, so a batch
# holds at most MAX_ISOLATED.
MAX_BATCH = 256
# Failures that mean "the connection is gone", as opposed to a handler's own error.
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, OSError)


class Worker:
    """Processes the inbox with ``router``'s handlers until ``stop`` is set.

    ``run()`` returns after a graceful stop: claiming stops, the current batches finish (the
    events they have not started are released unrun) and commit, within ``grace_seconds``;
    past that, they are cancelled and roll back whole.

    ``pooler`` says whether ``dsn`` goes through a transaction pooler (inbox._core.database.pooler):
    if so, no statement is prepared, the session limits are set in each claim transaction,
    and the listener connects to ``listen_dsn`` (a direct URL), or the worker only polls.
    ``prepared_statements`` as ``[database] prepared_statements``: "on" prepares behind a
    pooler that keeps prepared statements per client.
    ``connect_timeout_seconds`` bounds each connection attempt (per host).
    """

    def __init__(
        self,
        dsn: str,
        router: Router,
        settings: WorkerSettings,
        *,
        concurrency: int = 1,
        name: str | None = None,
        metrics: WorkerMetrics | None = None,
        grace_seconds: float | None = None,
        version: str | None = None,
        pooler: PoolerMode = "auto",
        prepared_statements: PreparedMode = "auto",
        listen_dsn: str | None = None,
        connect_timeout_seconds: float | None = None,
        health: WorkerHealth | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._dsn = dsn
        self._pooled = behind_pooler(pooler, dsn)
        self._connect = connect_kwargs(self._pooled, prepared_statements)
        if connect_timeout_seconds is not None:
            # Per host of a multi-host URL: a host that is gone without refusing would
            # otherwise hold each reconnection for the driver's two minutes.
            self._connect["connect_timeout"] = max(1, math.ceil(connect_timeout_seconds))
        self._listen_dsn = listen_dsn or (None if self._pooled else dsn)
        self._router = router
        self._settings = settings
        self._concurrency = concurrency
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.metrics = metrics or WorkerMetrics()
        # What the probes and the systemd watchdog read (processors._worker.health).
        self.health = health or WorkerHealth(settings, concurrency=concurrency)
        self._grace = (
            grace_seconds if grace_seconds is not None else (settings.handler_timeout_seconds + 5.0)
        )
        # What this process runs (processors._worker.version): reported, recorded with each
        # attempt, and required by replays that must run on it.
        self.version = version or code_version(router).version
        self._started_at = datetime.now(UTC)
        self._rehearsals = RehearsalRequests(
            dsn,
            router,
            self.name,
            connect=self._connect,
            timeout_seconds=settings.handler_timeout_seconds,
        )
        self._store = WorkStore(self.version, self._rehearsals.sources)
        self._batch_size = min(
            settings.batch_size, MAX_BATCH if settings.savepoints == "batch" else MAX_ISOLATED
        )
        # anyio primitives need the running event loop: made in run().
        self._wakeup: Wakeup | None = None
        self._gate: SuspectGate | None = None
        self._stop_requested: anyio.Event | None = None
        self._stopping = False
        self._rng = random.Random()
        self._outage = Outage()
        self._policy = Policy(
            max_attempts=settings.max_attempts,
            max_crashes=settings.max_crashes,
            backoff_base_seconds=settings.backoff_base_seconds,
            backoff_max_seconds=settings.backoff_max_seconds,
            unrouted=settings.unrouted,
        )
        timeout_ms = int(settings.handler_timeout_seconds * 1000)
        self._limits = SessionLimits(
            statement_timeout_ms=timeout_ms + 1000,
            idle_in_transaction_timeout_ms=timeout_ms + 10_000,
            # A batch runs for its deadline plus the last handler started before it, and a
            # failure's re-run pass gets up to as long again: four handler timeouts.
            transaction_timeout_ms=4 * timeout_ms + 30_000,
        )

    def request_stop(self) -> None:
        """Stop claiming; let current batches finish. Safe to call more than once."""
        if not self._stopping:
            log.info("worker_stopping", worker=self.name)
        self._stopping = True
        # Not ready from now on, while the current batches finish.
        self.health.draining = True
        if self._stop_requested is not None:
            self._stop_requested.set()
        if self._wakeup is not None:
            self._wakeup.set()

    async def run(self, stop: anyio.Event | None = None) -> None:
        """Claim and process events until ``stop`` is set (or ``request_stop`` is called),
        then stop gracefully, as the class says."""
        listen = self._settings.listen and self._listen_dsn is not None
        log.info(
            "worker_started",
            worker=self.name,
            concurrency=self._concurrency,
            batch_size=self._batch_size,
            listen=listen,
            pooled=self._pooled,
            routes=len(self._router.routes),
            version=self.version,
        )
        log_hooks_off()
        if self._settings.listen and not listen:
            log.warning(
                "worker_polling",
                worker=self.name,
                reason="a transaction pooler delivers no notifications",
                latency=f"events wait up to {self._settings.poll_interval_seconds:g} s"
                " ([worker] poll_interval_seconds)",
                fix="set [database] listen_url to a direct URL of the same database",
            )
        self._wakeup = wakeup = Wakeup()
        upkeep = Upkeep(self._dsn, self._connect, self._store, self.name, self._started_at)
        self._gate = SuspectGate()
        self._stop_requested = stop_requested = anyio.Event()
        if self._stopping:
            stop_requested.set()
        loops_left = self._concurrency
        loops_done = anyio.Event()
        self.health.started(time.monotonic(), listening=listen)

        async def loop(n: int, wakeup: Wakeup) -> None:
            nonlocal loops_left
            try:
                await self._claim_loop(n, wakeup, stop_requested)
            finally:
                self.health.left(n)
                loops_left -= 1
                if loops_left == 0:
                    loops_done.set()

        async with anyio.create_task_group() as tg:
            if listen:
                assert self._listen_dsn is not None
                listener = Listener(
                    self._listen_dsn,
                    wakeup,
                    self.metrics,
                    health_interval_seconds=min(self._settings.poll_interval_seconds, 5.0),
                    worker=self.name,
                    connect_kwargs=self._connect,
                    on_up=self._listener_up,
                )
                tg.start_soon(listener.run)
            for n in range(self._concurrency):
                tg.start_soon(loop, n, wakeup)
            tg.start_soon(upkeep.keep_partitions_ahead)
            tg.start_soon(upkeep.heartbeat)
            tg.start_soon(self._rehearsals.serve)
            tg.start_soon(self._tick)
            if stop is not None:
                tg.start_soon(self._stop_when, stop)
            await stop_requested.wait()
            # Claiming has stopped; the current batches get their grace period to commit.
            with anyio.move_on_after(self._grace) as grace:
                await loops_done.wait()
            if grace.cancelled_caught:
                log.warning("worker_grace_expired", worker=self.name, grace_seconds=self._grace)
            tg.cancel_scope.cancel()
        self.health.running = False
        await upkeep.report_stopped()
        log.info("worker_stopped", worker=self.name)

    def _listener_up(self, up: bool) -> None:
        self.health.listener_up = up

    async def _tick(self) -> None:
        """Say that the event loop runs (a probe in another thread reads it)."""
        while True:
            self.health.tick(time.monotonic())
            await anyio.sleep(TICK_SECONDS)

    async def _stop_when(self, stop: anyio.Event) -> None:
        await stop.wait()
        self.request_stop()

    async def _claim_loop(self, n: int, wakeup: Wakeup, stop_requested: anyio.Event) -> None:
        failures = 0
        unresolved: list[int] = []
        worker = f"{self.name}/{n}"
        cursor = ClaimCursor()
        health = self.health
        while not self._stopping:
            health.step(n, time.monotonic())
            try:
                async with claim_session(
                    self._dsn, worker, self._connect, self._store, self._limits, pooled=self._pooled
                ) as session:
                    health.connected(n, True)
                    self._reconnected(worker)
                    if n == 0:
                        await self._store.register_worker(session.side, self.name, self._started_at)
                    if unresolved:
                        await self._resolve_lost_commit(session.conn, unresolved, worker)
                        unresolved = []
                    while not self._stopping:
                        health.step(n, time.monotonic())
                        wake = wakeup.current()
                        claimed = await self._one_batch(session, n, cursor)
                        health.connected(n, True)
                        # Only a round that worked resets the backoff: an error that follows
                        # every fresh connection must not become a busy loop.
                        failures = 0
                        # Idle only after a claim from the start found nothing: a resumed
                        # claim sees nothing behind its position (a row given back, or
                        # committed late), which would then wait for the poll, not the rescan.
                        if claimed == 0 and cursor.from_start:
                            # The table is the truth: a retry due before the next poll,
                            # scheduled by any process, sets the wait.
                            due_in = await self._store.next_due_in(session.side)
                            poll = self._settings.poll_interval_seconds
                            health.step(n, time.monotonic())
                            with anyio.move_on_after(idle_wait_seconds(poll, due_in)):
                                await wake.wait()
            except CommitOutcomeUnknownError as exc:
                health.connected(n, False)
                unresolved = exc.event_ids
                failures += 1
                await self._back_off(worker, failures, exc, stop_requested)
            except (psycopg.Error, OSError) as exc:
                # The connections are closed on the way out (a batch in flight rolls back
                # whole); the loop reconnects with backoff.
                health.connected(n, False)
                failures += 1
                await self._back_off(worker, failures, exc, stop_requested)

    async def _back_off(
        self, worker: str, failures: int, exc: BaseException, stop_requested: anyio.Event
    ) -> None:
        self.metrics.reconnects.inc()
        delay = reconnect_delay(failures, self._rng)
        # While the database stays down, once per interval (the reconnects metric counts
        # every attempt).
        if self._outage.failed(time.monotonic()):
            log.warning(
                "worker_connection_lost",
                worker=worker,
                server=describe_server(self._dsn),
                error=f"{type(exc).__name__}: {exc}",
                retry_in_seconds=round(delay, 3),
            )
        with anyio.move_on_after(delay):
            await stop_requested.wait()

    def _reconnected(self, worker: str) -> None:
        down = self._outage.recovered(time.monotonic())
        if down is not None:
            log.info("worker_reconnected", worker=worker, down_seconds=round(down, 3))

    async def _resolve_lost_commit(
        self, conn: psycopg.AsyncConnection[Any], event_ids: list[int], worker: str
    ) -> None:
        unsettled = await self._store.unsettled(conn, event_ids)
        await conn.rollback()
        log.warning(
            "commit_outcome_resolved",
            worker=worker,
            committed=len(event_ids) - len(unsettled),
            not_committed=len(unsettled),
            note="events not committed are claimable again; nothing is re-run blindly",
        )

    async def _one_batch(self, session: ClaimSession, n: int, cursor: ClaimCursor) -> int:
        assert self._gate is not None
        conn = session.conn
        shared_savepoint = self._settings.savepoints == "batch"
        async with self._gate.batch():
            # Claim loop 0 of each process also looks for suspects, in the same round trip,
            # when it scans from the start (at least every second): a suspect is never in a
            # batch, so between those scans it only waits.
            after = cursor.start(time.monotonic())
            claim = await self._store.claim_batch(
                conn,
                self._batch_size,
                look_for_suspect=n == 0 and cursor.from_start,
                then=BATCH_SAVEPOINT if shared_savepoint else None,
                after=after,
                windowed=cursor.windowed,
            )
            cursor.claimed(claim, self._batch_size)
            if not claim.suspect_waiting:
                return await self._run_claimed(session, claim.batch, shared_savepoint)
            await conn.rollback()
        # A suspect runs one at a time, with the process to itself (see _gate), so a poison
        # pill's crashes are charged to it alone.
        async with self._gate.suspect():
            batch = await self._store.claim_suspect(conn)
            return await self._run_claimed(session, batch, False)

    async def _run_claimed(
        self, session: ClaimSession, batch: list[ClaimedEvent], batch_savepoint_taken: bool
    ) -> int:
        conn, worker = session.conn, session.worker
        # The batch's time budget starts once its locks are held, not before the waits at
        # the gate: a suspect that waited for other batches must not be released unrun.
        started = time.monotonic()
        if not batch:
            await conn.rollback()
            return 0
        event_ids = [item.claimed.event_id for item in batch]
        # An ordered event whose key is busy (the store says why) goes back unrun; the
        # loop claims again at once, as after any batch that claimed something.
        claimed = len(batch)
        busy = await self._store.count_claims(session.side, batch, worker)
        to_run, released = release_busy(batch, busy)
        runner = BatchRunner(
            self._router,
            self._policy,
            handler_timeout_seconds=self._settings.handler_timeout_seconds,
            worker=worker,
            savepoints=self._settings.savepoints,
            rng=self._rng,
        )
        decisions = await runner.run(
            conn,
            session.sync_view,
            to_run,
            should_stop=lambda: self._stopping,
            deadline=started + self._settings.handler_timeout_seconds,
            batch_savepoint_taken=batch_savepoint_taken,
        )
        decisions.extend(released)
        received_at = {item.claimed.event_id: item.event.received_at for item in batch}
        await self._store.settle(conn, decisions, worker, received_at)
        try:
            await conn.commit()
        except CONNECTION_ERRORS as exc:
            raise CommitOutcomeUnknownError(event_ids) from exc
        elapsed = time.monotonic() - started
        # Every claimed event has a decision, the busy ones released included: both count
        # them by their event, so both take the whole batch.
        self.metrics.observe_batch(batch, decisions, elapsed)
        log_settled(self._settings.log_events, worker, batch, decisions, elapsed)
        return claimed
