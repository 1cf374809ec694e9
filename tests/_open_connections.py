"""No test leaves a psycopg connection of this process open (a plugin of tests/conftest.py).

A connection that nobody closed is only noticed when the garbage collector frees it: its
ResourceWarning then fails whichever test happens to be running, with no clue where the
connection was made. Here each connection made during a test's call remembers the stack
that made it, and one still open when the call ends fails that test, naming that stack.
Connections that belong to a pool are the pool's to close, and those made on other threads
(a server or a scrape the test started, finishing its request as the test ends) are their
thread's: both are left alone.
"""

from __future__ import annotations

import threading
import traceback
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

# The connections made during the current test's call, with the stack that made each;
# None between calls.
_made: weakref.WeakKeyDictionary[Any, str] | None = None


def _recording(init: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if _made is not None and threading.current_thread() is threading.main_thread():
            _made[self] = "".join(traceback.format_stack(limit=16)[:-1])

    return __init__


for _cls in (psycopg.Connection, psycopg.AsyncConnection):
    _cls.__init__ = _recording(_cls.__init__)  # type: ignore[method-assign]


def _left_open(made: weakref.WeakKeyDictionary[Any, str]) -> list[str]:
    return [
        f"{conn!r}, made at:\n{stack}"
        for conn, stack in list(made.items())
        if not conn.closed and not hasattr(conn, "_pool")
    ]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    global _made
    _made = made = weakref.WeakKeyDictionary()
    try:
        result = yield
    finally:
        _made = None
    if left := _left_open(made):
        raise AssertionError(f"{len(left)} connection(s) left open:\n" + "\n".join(left))
    return result
