"""What pg-inbox's own long-running processes (``inbox serve``, ``inbox worker``) set up for
themselves: the garbage collector's thresholds and the event loop. Never done on import or
by the library a host embeds (``InboxWriter``, ``processors.Worker`` in a host's own loop):
that process and its settings are the host's."""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Awaitable, Callable, Iterator
from types import ModuleType
from typing import Any, Literal, TypeVar

import anyio

from inbox._core.runtime.extras import require_extra

__all__ = ["DAEMON_GC_THRESHOLDS", "daemon_gc", "run_daemon_loop"]

T = TypeVar("T")

# Python's default first threshold (700 allocations) collects the young generation hundreds
# of times a second in these processes, and each collection promotes whatever is in flight
# (a request waiting for its group's commit, a claimed batch's events and their handlers'
# cursors) until it dies in the oldest generation, whose full collections traverse all of it
# and stop every request in flight. What these thresholds bought: benchmarks/ANALYSIS.md
# ("Ingest through HTTP", "The worker's process").
DAEMON_GC_THRESHOLDS = (20_000, 20, 20)


@contextlib.contextmanager
def daemon_gc() -> Iterator[None]:
    """The collector's thresholds for a serving process, and the previous ones back after."""
    previous = gc.get_threshold()
    gc.set_threshold(*DAEMON_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def run_daemon_loop(
    func: Callable[..., Awaitable[T]],
    *args: Any,
    loop: Literal["auto", "asyncio", "uvloop"] = "auto",
) -> T:
    """Run ``func(*args)`` to completion on the event loop a daemon of ours serves on:
    ``loop="auto"`` takes uvloop where it is installed (the server extra brings it; uvicorn
    picks it for ``inbox serve`` the same way), else asyncio's own loop; ``"uvloop"`` without
    it is a ``ConfigError`` that names the extra."""
    uvloop: ModuleType | None = None
    if loop == "uvloop":
        uvloop = require_extra("uvloop", "server", '[worker] event_loop = "uvloop"')
    elif loop == "auto":
        try:
            uvloop = importlib.import_module("uvloop")
        except ImportError:
            uvloop = None
    options = {"loop_factory": uvloop.new_event_loop} if uvloop is not None else {}
    return anyio.run(func, *args, backend="asyncio", backend_options=options)
