"""Where and as whom an operation runs: ``Db`` (a connection string, or the caller's open
connection), the connection one operation uses, and the actor its audit records.

Every function of the operator API (``inbox.queries``, replay, retention) takes a ``Db``;
this is the one place that turns it into a connection.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from inbox._core.database.db import translate_driver_errors

__all__ = ["Db", "connection", "current_actor"]

Db = str | psycopg.Connection[Any]


@contextmanager
def connection(db: Db, action: str = "query the inbox") -> Iterator[psycopg.Connection[Any]]:
    """A connection for one operation: the caller's, or a new one committed on success."""
    with translate_driver_errors(action):
        if not isinstance(db, str):
            yield db
            return
        with psycopg.connect(db, application_name="pg-inbox operator") as conn:
            yield conn  # psycopg commits on a clean exit, rolls back on an exception


def current_actor() -> str:
    """``user@host`` of this process: who a replay or prune is recorded as."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        user = "unknown"
    return f"{user}@{socket.gethostname()}"
