"""Holding a pipeline's statements in the kernel, so that they leave the worker as one write.

In pipeline mode psycopg flushes each statement to the socket as it is executed: a
``sendto`` per statement on the worker, and on the server a wake-up and a read per
statement while the backend waits for the next one. Linux's ``TCP_CORK`` holds partial
segments back until it is cleared (full segments still go at once). The batch's pipeline
(processors._pipeline) corks the claim connection's socket while it carries the async
handlers' statements and uncorks it before its sync; and since a handler may wait for a
result itself (a fetch), or psycopg may (a BEGIN), the connection's ``wait`` is hooked while
corked: the first wait for the server alone uncorks first. Nothing stays corked while psycopg
waits for a reply, so no statement waits for the kernel's 200 ms limit on a cork.

The hook is an attribute of the connection object, not a subclass: a host that instruments
psycopg (OpenTelemetry's instrumentor replaces ``AsyncConnection.connect``) gets plain
``AsyncConnection`` objects, which this corks all the same.

Where there is no TCP_CORK (not Linux) or the socket is not TCP (a Unix socket), nothing is
corked and nothing is hooked.
"""

from __future__ import annotations

import socket
from collections.abc import Generator
from typing import Any

import psycopg
from psycopg.abc import RV, PQGen
from psycopg.waiting import Ready, Wait

__all__ = ["Cork"]

_TCP_CORK: int | None = getattr(socket, "TCP_CORK", None)
_TCP_FAMILIES = (socket.AF_INET, socket.AF_INET6)
_WAIT_W = int(Wait.W)


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


class Cork:
    """``cork()`` once a pipeline is open; ``uncork()`` before its sync (and, while corked,
    the connection's next wait for the server uncorks first)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn
        self._fd = -1
        self.corked = False

    def cork(self) -> None:
        if self.corked:
            return
        fd = self._conn.pgconn.socket
        if not _set_cork(fd, True):
            return
        self._fd, self.corked = fd, True
        # An instance attribute shadows the class's method: psycopg's cursors and pipeline
        # call ``conn.wait`` for every operation.
        self._conn.wait = self._wait  # type: ignore[method-assign]

    def uncork(self) -> None:
        if not self.corked:
            return
        self.corked = False
        self._conn.__dict__.pop("wait", None)
        # If this fails the connection is broken, which psycopg reports on its own.
        _set_cork(self._fd, False)

    async def _wait(
        self,
        gen: PQGen[RV],
        interval: float = 0.1,
        timeout: float | None = None,  # noqa: ASYNC109 - psycopg's signature
    ) -> RV:
        conn = self._conn
        return await type(conn).wait(conn, self._uncorking(gen), interval, timeout)

    def _uncorking(self, gen: PQGen[RV]) -> Generator[Wait, Ready | int, RV]:
        """``gen``, uncorking before its first wait for the server alone (psycopg waits
        only to read when it needs a result; sending, it waits to read or write)."""
        try:
            state = next(gen)
            while state & _WAIT_W and self.corked:
                state = gen.send((yield state))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        self.uncork()
        try:
            while True:
                state = gen.send((yield state))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
