"""The console's sign-in attempts in the database, counted before each password is checked
and forgiven when it was right. The database holds the count so that every console process
(``inbox serve`` runs several) spends one budget, and it serialises the attempts of one
address so that guesses sent together, to any process, cannot all pass the check before
the first of them is counted."""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

import psycopg

from inbox._core.sql import load_queries

__all__ = ["SignInCount", "begin_sign_in", "forgive_sign_in"]

QUERIES = load_queries("inbox.sql", "console.sql")


class SignInCount(NamedTuple):
    """The attempt's id when it was counted; else the seconds until each limit it reached
    lets an attempt through again (None: that limit was not reached)."""

    attempt: int | None
    name_wait: float | None
    address_wait: float | None


def begin_sign_in(
    conn: psycopg.Connection[Any],
    name: str,
    address: str,
    *,
    attempts: int,
    per_address: int,
    window_seconds: float,
) -> SignInCount:
    """Count an attempt of ``name`` from ``address`` as failed, unless ``attempts``
    failures of the name from the address, or ``per_address`` of the address whatever the
    names, fall within the last ``window_seconds``."""
    with conn.transaction():
        conn.execute(QUERIES["lock_sign_in"], {"address": address})
        row = conn.execute(
            QUERIES["begin_sign_in"],
            {
                "name_sha256": hashlib.sha256(name.encode()).digest(),
                "address": address,
                "attempts": attempts,
                "per_address": per_address,
                "window_seconds": window_seconds,
            },
        ).fetchone()
    assert row is not None  # the statement always returns its one row
    return SignInCount(*row)


def forgive_sign_in(conn: psycopg.Connection[Any], attempt: int) -> None:
    """The attempt's password was right: it is no failure (the failures before it stay)."""
    conn.execute(QUERIES["forgive_sign_in"], {"id": attempt})
