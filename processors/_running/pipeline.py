"""The pipeline a batch's async handlers share under the batch savepoint (``batch``): their
statements go out without waiting, and one sync, bounded by the earliest deadline of the
handlers it carries, collects them. While it is open, its statements are sent without a wait on
the event loop each, and over TCP on Linux held in the kernel until the sync
(processors._running.pipeline_send), so that they leave as one write."""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager
from typing import Any

import psycopg
from psycopg import pq

from processors._compat import hooks, pipeline_failed
from processors._running.pipeline_send import PipelineSend

__all__ = ["BatchPipeline"]

# The shortest wait for a pipeline's results, whatever the handlers' deadlines say.
SYNC_FLOOR_SECONDS = 0.1


class BatchPipeline:
    """The shared pass's pipeline, opened before an async handler, closed (one sync) before a
    sync handler, after a handler's failure and at the end of the pass."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn
        self._send = PipelineSend(conn)
        self._open: AbstractAsyncContextManager[psycopg.AsyncPipeline] | None = None
        self._pipeline: psycopg.AsyncPipeline | None = None
        self._deadline = float("inf")
        self.longest_timeout = 0.0
        # Open without pipeline mode, when psycopg's hooks are off (processors._compat):
        # psycopg's own pipeline waits for ever on a statement larger than the socket's
        # buffers, so without the hooks each statement goes on its own.
        self._plain = False

    async def open(self, handler_timeout: float) -> None:
        """Before an async handler whose deadline is ``handler_timeout`` seconds away."""
        if self._open is None and not self._plain:
            if hooks().pipeline:
                opening = self._conn.pipeline()
                self._pipeline = await opening.__aenter__()
                self._open = opening
                try:
                    self._send.start()
                except (AttributeError, TypeError) as exc:
                    # A psycopg the hooks do not fit: leave pipeline mode (nothing is sent
                    # yet) and go on without it.
                    pipeline_failed(exc)
                    await self.close()
                    self._plain = True
            else:
                self._plain = True
        self._deadline = min(self._deadline, time.monotonic() + handler_timeout)
        self.longest_timeout = max(self.longest_timeout, handler_timeout)

    async def close(self) -> bool:
        """Sync and leave pipeline mode. True when every statement sent succeeded and the
        transaction is not aborted (a handler may have caught an error and gone on).

        A sync still waiting at the earliest deadline of the handlers whose statements it
        carries is cancelled on the server (psycopg waits for the cancel to land, so the
        connection stays usable for the undo); the isolated re-run then finds whose
        statement was slow, each handler waiting on its own."""
        if self._plain:
            self._plain = False
            return self._conn.pgconn.transaction_status != pq.TransactionStatus.INERROR
        if self._open is None or self._pipeline is None:
            return True
        opened, pipeline = self._open, self._pipeline
        self._open = self._pipeline = None
        # A floor, so that results already on their way are not cancelled for nothing when
        # the handlers' own Python outlasted the deadline.
        wait = max(self._deadline - time.monotonic(), SYNC_FLOOR_SECONDS)
        self._deadline = float("inf")
        clean = True
        try:
            try:
                async with asyncio.timeout(wait):
                    await pipeline.sync()
            except (psycopg.Error, TimeoutError):
                clean = False
            try:
                # Nothing is in flight now: leaving syncs once more, which raises only if the
                # connection is gone (then the undo fails too and the batch rolls back whole).
                await opened.__aexit__(None, None, None)
            except psycopg.Error:
                clean = False
        finally:
            # However the sync ends (a worker's shutdown cancels it too).
            self._send.stop()
        return clean and self._conn.pgconn.transaction_status != pq.TransactionStatus.INERROR
