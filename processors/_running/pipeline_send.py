"""How a batch's pipelined statements leave the worker: without a wait on the event loop per
statement, and over TCP on Linux held in the kernel until the sync, so that they leave as one
write.

In pipeline mode psycopg hands every statement to ``conn.wait``, asking to send (it waits to
read or write, and sends once the socket is writable); its own wait asks the kernel with a
poll each time, twice a statement. While the batch's pipeline is open the connection's
``wait`` is hooked: a request to send is answered "writable" at once as long as libpq holds
nothing unsent (it flushes what it holds first, which is what the answer makes psycopg do
anyway), so the kernel has taken everything so far and takes the next statement too: two
fewer system calls a statement and no pass through psycopg's waiting loop. When the kernel's
buffer is full (a server that stopped reading), libpq keeps the rest, and the request goes to
psycopg's wait, which waits for the socket: what a handler sends never piles up in the worker
faster than the server reads it. A wait to read (a handler's fetch, psycopg's BEGIN) always
goes to psycopg's wait.

psycopg also has libpq send each statement on its own, at once (a flush after each: one
``send`` system call a statement). While the pipeline is open, a statement is therefore held
in the worker instead, in the order psycopg queued it, and up to HOLD_MAX go to libpq together
when the pass needs them sent: the sync, a handler's fetch (before psycopg's flush request),
or the HOLD_MAX-th. Nothing is lost by the wait: no statement's result is read before one of
those anyway.

Linux's ``TCP_CORK`` holds partial segments back until it is cleared (full segments still go
at once): without it, each statement is a ``sendto`` that the server wakes up for, reads and
runs alone. The socket is corked while the pipeline carries the async handlers' statements
and uncorked before the first wait for the server (a handler's fetch, the sync's results):
nothing stays corked while psycopg waits for a reply, so no statement waits for the kernel's
200 ms limit on a cork.
Where there is no TCP_CORK (not Linux) or the socket is not TCP (a Unix socket), nothing is
corked; the waits are answered all the same.

The hook also finishes a send before any wait to read. psycopg (3.3.9) ends a pipeline's
send once it has no statement left to queue, even when libpq still holds part of the last one
unsent, and then waits for the results only: a statement larger than the kernel's socket
buffers (a few hundred KB on a Unix socket, a few MB over TCP; a webhook's body a handler
stores) leaves the server waiting for its rest and the worker for its results, until the
handler's time limit. So the hook stays on through the pipeline's sync and its exit, and a
wait to read while libpq holds unsent bytes first sends them, reading what the server sends
meanwhile, as psycopg's own send does.

The hook is an attribute of the connection object, not a subclass: a host that instruments
psycopg (OpenTelemetry's instrumentor replaces ``AsyncConnection.connect``) gets plain
``AsyncConnection`` objects, which this hooks all the same.

What each part saves the worker: benchmarks/ANALYSIS.md, "The worker's pipeline".
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
from psycopg.abc import RV, PQGen
from psycopg.pq.abc import PGconn
from psycopg.waiting import Ready, Wait

__all__ = ["PipelineSend"]

_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)
_TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)
_WAIT_W = int(Wait.W)
_READY_W = int(Ready.W)
_READY_R = int(Ready.R)
# Never keep the event loop from running for longer than this (psycopg's own wait gives it
# a turn as often): the worker's other claim loops, its listener and a handler's time limit
# run on it.
MAX_BUSY_SECONDS = 0.005
# Statements held in the worker at most before they are handed to libpq together: one
# ``send`` for this many instead of one each; of the holds measured, this one took the least
# CPU (benchmarks/ANALYSIS.md, "The worker's pipeline").
HOLD_MAX = 32


def _set_cork(fd: int, on: bool) -> bool:
    """Set or clear TCP_CORK on ``fd``; False where it does not apply or fails."""
    if _TCP_CORK is None:
        return False
    # A socket object over libpq's descriptor, let go of before it is collected: libpq owns
    # the descriptor and closes it.
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return False
    try:
        if sock.family not in _TCP_FAMILIES:
            return False
        sock.setsockopt(socket.IPPROTO_TCP, _TCP_CORK, 1 if on else 0)
    except OSError:
        return False
    finally:
        sock.detach()
    return True


def _resumed(gen: PQGen[RV], state: Wait, pgconn: PGconn) -> PQGen[RV]:
    """``gen``, already started and waiting in ``state``, for psycopg's wait to go on with;
    a wait to read while libpq holds unsent bytes sends them first (see the module's
    docstring), reading what the server sends meanwhile, as psycopg's own send does: the
    server may be waiting to send before it reads on."""
    try:
        while True:
            if state & _WAIT_W or not pgconn.flush():
                state = gen.send((yield state))
                continue
            # The flush above sent what the kernel took; wait for room for the rest.
            while True:
                # None when psycopg's wait starts this generator again (after a cancel).
                if ((yield Wait.RW) or 0) & _READY_R:
                    pgconn.consume_input()
                if not pgconn.flush():
                    break
            # What was read meanwhile is in libpq's buffer, where a wait for the socket
            # would not see it: the generator looks there first.
            state = gen.send(_READY_R)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


class PipelineSend:
    """``start()`` once a pipeline is open; ``stop()`` once it is closed (synced and left)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn
        self._fd = -1
        self.corked = False
        self.hooked = False
        self._loop_turn = time.monotonic()
        self._held: deque[Callable[[], None]] = deque()
        self._pipeline: psycopg.AsyncPipeline | None = None

    def start(self) -> None:
        if self.hooked:
            return
        self.hooked = True
        pipeline = self._conn._pipeline
        if isinstance(pipeline, psycopg.AsyncPipeline):
            self._pipeline = pipeline
            # Shadowed as ``wait`` is: the cursors call the pipeline's for every statement.
            vars(pipeline).update(_communicate_gen=self._communicate, _fetch_gen=self._fetch)
        # An instance attribute shadows the class's method: psycopg's cursors and pipeline
        # call ``conn.wait`` for every operation.
        self._conn.wait = self._wait  # type: ignore[method-assign]
        fd = self._conn.pgconn.socket
        if _set_cork(fd, True):
            self._fd, self.corked = fd, True

    def stop(self) -> None:
        if self.hooked:
            self.hooked = False
            self._conn.__dict__.pop("wait", None)
            if self._pipeline is not None:
                pipeline, self._pipeline = self._pipeline, None
                vars(pipeline).pop("_communicate_gen", None)
                vars(pipeline).pop("_fetch_gen", None)
                # Still held (the pipeline was left without a sync): psycopg's own queue
                # sends them first, as if they had never been held.
                pipeline.command_queue.extendleft(reversed(self._held))
                self._held.clear()
        self.uncork()

    def uncork(self) -> None:
        if not self.corked:
            return
        self.corked = False
        # If this fails the connection is broken, which psycopg reports on its own.
        _set_cork(self._fd, False)

    def _release(self) -> None:
        """Hand what is held to libpq, in the order it was queued; nothing is sent yet (in
        pipeline mode libpq sends at a flush, or on its own past 64 KB)."""
        held = self._held
        while held:
            held.popleft()()

    def _communicate(self) -> PQGen[None]:
        """The pipeline's ``_communicate_gen``: statements are held until HOLD_MAX are;
        then they, or what is held and then anything else (a sync), go through psycopg's
        own, in one write."""
        pipeline = self._pipeline
        assert pipeline is not None
        queue = pipeline.command_queue
        # A statement is a partial (a cursor's send, a SAVEPOINT); a sync is not.
        if all(type(c) is partial for c in queue):
            self._held.extend(queue)
            queue.clear()
            if len(self._held) < HOLD_MAX:
                return
        self._release()
        yield from type(pipeline)._communicate_gen(pipeline)

    def _fetch(self, *, flush: bool) -> PQGen[None]:
        """The pipeline's ``_fetch_gen``: what is held goes before its flush request (a
        handler's fetch), so the results it waits for are on their way."""
        pipeline = self._pipeline
        assert pipeline is not None
        self._release()
        yield from type(pipeline)._fetch_gen(pipeline, flush=flush)

    async def _wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
        if time.monotonic() - self._loop_turn >= MAX_BUSY_SECONDS:
            await asyncio.sleep(0)
            self._loop_turn = time.monotonic()
        pgconn = self._conn.pgconn
        try:
            state = next(gen)
            # flush() is 0 when libpq holds nothing unsent (then it makes no system call).
            while state & _WAIT_W and not pgconn.flush():
                state = gen.send(_READY_W)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        # psycopg waits for the server (to read, or for room to send): nothing may stay
        # corked meanwhile.
        self.uncork()
        conn = self._conn
        return await type(conn).wait(conn, _resumed(gen, state, pgconn), *args, **kwargs)
