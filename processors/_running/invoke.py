"""One handler call within its time limit, on the claim transaction's connections: an async
handler under the batch's lazily re-armed deadline (processors._running.deadline), a sync one in a
worker thread whose query is cancelled on the server at the deadline."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import psycopg

from processors._model.errors import HandlerTimeoutError
from processors._model.event import Event
from processors._model.router import Route
from processors._running.deadline import HandlerDeadline

__all__ = ["call_handler"]


async def call_handler(
    route: Route,
    event: Event | list[Event],
    conn: psycopg.AsyncConnection[Any],
    sync_conn: psycopg.Connection[Any],
    *,
    limit_seconds: float,
    deadline: HandlerDeadline,
) -> None:
    """Call ``route``'s handler with ``event`` (a list for a batch handler) on the claim
    transaction's connection; ``HandlerTimeoutError`` past ``limit_seconds``."""
    # Which of the four kinds it is (async or not, one event or a list) the route says.
    handler: Any = route.handler
    if route.is_async:
        # An asyncio cancellation, not an anyio cancel scope: asyncio cancels once,
        # which lets psycopg cancel the running query on the server and keep the
        # connection (and so the batch); anyio's level cancellation interrupts that
        # clean-up and psycopg must close the connection. psycopg's async side runs on
        # asyncio only anyway.
        try:
            with deadline.running(limit_seconds):
                await handler(event, conn)
        except HandlerDeadline.Expired as exc:
            raise HandlerTimeoutError(f"handler {route.name} exceeded {limit_seconds:g} s") from exc
        return

    # A thread cannot be cancelled: at the deadline, cancel its query on the server
    # (the usual way a sync handler hangs) and report the attempt as timed out.
    timed_out = threading.Event()
    # Held while the cancel is sent, and taken when the handler is done: a cancel that
    # fires late must never land on the next statement (another event's, or the undo).
    handler_running = threading.Lock()
    finished = False

    def on_deadline() -> None:
        with handler_running:
            if finished:
                return
            timed_out.set()
            sync_conn.cancel_safe()

    timer = threading.Timer(limit_seconds, on_deadline)
    timer.daemon = True
    timer.start()
    try:
        await anyio.to_thread.run_sync(handler, event, sync_conn)
    except Exception:
        if timed_out.is_set():
            raise HandlerTimeoutError(
                f"handler {route.name} exceeded {limit_seconds:g} s"
            ) from None
        raise
    finally:
        timer.cancel()
        with handler_running:
            finished = True
    if timed_out.is_set():
        raise HandlerTimeoutError(f"handler {route.name} exceeded {limit_seconds:g} s")
