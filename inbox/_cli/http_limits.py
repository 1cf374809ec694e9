"""What one client may hold of the receiver: the size of a request's head and the time it
takes to send it, and its body.

uvicorn bounds the requests served at once (``limit_concurrency``: a 503) and idle
keep-alive connections (``timeout_keep_alive``), and ``inbox serve`` uses both. Its
httptools protocol, the fast one, has no limit on a head (httptools keeps an unfinished
header whole, however long) and no clock on a request arriving slowly, nor on a new
connection that sends nothing. This protocol adds them:

- a head over ``max_header_bytes`` or with more than ``max_headers`` fields: 431;
- a head not received within ``head_timeout_seconds`` of the connection (or, on a kept-alive
  connection, of the request's first byte), or a body not within ``body_timeout_seconds`` of
  its head: 408; a connection that sent nothing at all is closed without a word, as an idle
  keep-alive connection is.

A refusal is answered, then the connection lingers (RFC 9112, 9.6): its write side is
closed and what the client still sends is read and dropped for a moment, so that the answer
is read rather than lost to a reset. Deadlines are checked by one timer per server, every
``_tick`` seconds, not one per request: arming and cancelling timers was a measurable part
of a request's cost.

The protocol subclasses a private class of uvicorn's: ``inbox._cli.uvicorn_hooks`` checks at
start-up that it still fits, and imports this module only then.
"""

from __future__ import annotations

import asyncio
import http
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

__all__ = ["HttpLimits", "limited_protocol"]

# After a refusal: how long, and how many more bytes, the connection reads and drops.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1 << 20


@dataclass(frozen=True)
class HttpLimits:
    max_header_bytes: int
    max_headers: int
    head_timeout_seconds: float
    body_timeout_seconds: float

    @property
    def tick(self) -> float:
        """How often deadlines are checked: a tenth of the shortest, at most a second."""
        return min(1.0, self.head_timeout_seconds / 10, self.body_timeout_seconds / 10)


class _Refused(Exception):
    """Raised in a parser callback to stop the parser (it re-raises it as a parse error)."""


class _Deadlines:
    """The server's one timer: closes the connections whose deadline has passed."""

    def __init__(self, state: ServerState, loop: asyncio.AbstractEventLoop, tick: float):
        self._connections = state.connections
        self._loop = loop
        self._tick = tick
        self._timer: asyncio.TimerHandle | None = None

    def wake(self) -> None:
        if self._timer is None:
            self._timer = self._loop.call_later(self._tick, self._check)

    def _check(self) -> None:
        self._timer = None
        now = self._loop.time()
        for connection in list(self._connections):
            if (
                isinstance(connection, _LimitedHttpToolsProtocol)
                and connection.deadline is not None
                and now >= connection.deadline
            ):
                connection.deadline_passed()
        if self._connections:
            self.wake()


# One clock per server (a server is one uvicorn.Server; `inbox dev` may run several).
_DEADLINES: weakref.WeakKeyDictionary[ServerState, _Deadlines] = weakref.WeakKeyDictionary()


# The parser calls these on every request: called directly, not through super(), whose
# lookup is a measurable part of an override's cost.
_data_received = HttpToolsProtocol.data_received
_on_headers_complete = HttpToolsProtocol.on_headers_complete
_on_message_complete = HttpToolsProtocol.on_message_complete


class _LimitedHttpToolsProtocol(HttpToolsProtocol):
    limits: ClassVar[HttpLimits]

    # Slots, not the instance's dict: uvicorn's protocol has ~28 attributes, and past 30
    # CPython gives up sharing the dict's keys between instances, which slows every
    # attribute uvicorn reads.
    __slots__ = ("_deadlines", "_head_bytes", "_in_body", "_lingering", "_refused", "deadline")

    def __init__(self, config: Any, server_state: ServerState, *args: Any, **kwargs: Any):
        super().__init__(config, server_state, *args, **kwargs)
        deadlines = _DEADLINES.get(server_state)
        if deadlines is None:
            deadlines = _DEADLINES[server_state] = _Deadlines(
                server_state, self.loop, self.limits.tick
            )
        self._deadlines = deadlines
        self.deadline: float | None = None
        self._in_body = False
        # Received since the head began: an overcount by the start of a body that came
        # with it, so only a head past the limit is measured exactly.
        self._head_bytes = 0
        self._refused: int | None = None
        self._lingering = 0  # bytes dropped since a refusal

    # Each override is a Python call on every request: there are as few as the limits need.

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.deadline = self.loop.time() + self.limits.head_timeout_seconds
        self._deadlines.wake()

    def data_received(self, data: bytes) -> None:
        if self._refused is not None:
            self._lingering += len(data)
            if self._lingering > LINGER_BYTES:
                self.transport.close()
            return
        if not self._in_body:
            self._head_bytes += len(data)
            if self.deadline is None:  # the first bytes of a kept-alive connection's next request
                self.deadline = self.loop.time() + self.limits.head_timeout_seconds
                self._deadlines.wake()
        _data_received(self, data)
        if (
            not self._in_body
            and self._head_bytes > self.limits.max_header_bytes
            and self._refused is None
        ):
            self._refuse(431)  # a head still unfinished past the limit

    def on_headers_complete(self) -> None:
        limits = self.limits
        if len(self.headers) > limits.max_headers or (
            self._head_bytes > limits.max_header_bytes
            and self._head_size() > limits.max_header_bytes
        ):
            self._refused = 431
            raise _Refused
        self._in_body = True
        self.deadline = self.loop.time() + limits.body_timeout_seconds
        _on_headers_complete(self)

    def on_message_complete(self) -> None:
        self._in_body = False
        self._head_bytes = 0
        self.deadline = None
        _on_message_complete(self)

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer to a parse error, which is also how a callback's refusal ends.
        if self._refused is not None:
            self._refuse(self._refused)
        else:
            super().send_400_response(msg)

    def deadline_passed(self) -> None:
        if self._refused is not None:
            self.transport.close()  # the linger is over
        elif self._head_bytes == 0 and not self._in_body:
            self.transport.close()  # nothing was sent: nobody to answer
        elif self._in_body and self.cycle.response_complete:
            self.transport.close()  # answered early (413), the rest never came
        else:
            self._refuse(408)

    def _head_size(self) -> int:
        """The head's exact size (its request line counted by the URL alone)."""
        return len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def _refuse(self, status: int) -> None:
        self._refused = status
        if self.cycle is not None and not self.cycle.response_complete:
            # The app is waiting for the rest of the body: it hears a disconnect, and
            # whatever it sends is dropped.
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        phrase = http.HTTPStatus(status).phrase
        body = phrase.encode("ascii")
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s"
            % (status, phrase.encode("ascii"), len(body), body)
        )
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.flow.resume_reading()
            self.deadline = self.loop.time() + LINGER_SECONDS
            self._deadlines.wake()
        else:
            self.transport.close()


def limited_protocol(limits: HttpLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with ``limits`` (pass it as ``uvicorn.Config(http=...)``)."""
    return type("LimitedHttpToolsProtocol", (_LimitedHttpToolsProtocol,), {"limits": limits})
