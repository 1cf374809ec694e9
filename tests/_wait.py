"""Reading the database in a test's checks, and waiting for a state of it, not for a length
of time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import psycopg

# How often a condition is re-read while waiting for it. The wait ends as soon as the
# condition holds; only the deadline is a length of time, and reaching it fails the test.
RECHECK_SECONDS = 0.02


def rows(url: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Every row ``query`` returns, read on a connection of its own."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


def row(url: str, query: str, params: Any = None) -> tuple[Any, ...] | None:
    """The first row ``query`` returns (None when there is none)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchone()


def scalar(url: str, query: str, params: Any = None) -> Any:
    """The first column of the first row (None when there is no row)."""
    first = row(url, query, params)
    return None if first is None else first[0]


def wait_for(condition: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Block until ``condition()`` is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(RECHECK_SECONDS)


async def await_for(condition: Callable[[], bool], *, within: float, what: str) -> None:
    """``wait_for`` for async tests (the condition runs in a thread)."""
    try:
        with anyio.fail_after(within):
            # A database state has no event to await: it is re-read until it holds.
            while not await anyio.to_thread.run_sync(condition):  # noqa: ASYNC110
                await anyio.sleep(RECHECK_SECONDS)
    except TimeoutError:
        raise AssertionError(f"timed out after {within} s waiting for {what}") from None
