"""The console's sessions in the database: started at sign-in, checked and touched on every
request, ended at sign-out. The cookie carries a random token; only its SHA-256 is stored,
so reading the table (the operator role can) gives no session away."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import psycopg

from inbox._core.sql import load_queries

__all__ = ["credential_digest", "end_session", "start_session", "touch_session"]

QUERIES = load_queries("inbox.sql", "console.sql")

Via = Literal["password", "dev"]


def _id(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def credential_digest(name: str, role: str, password_hash: str | None) -> bytes:
    """What a session remembers of its user's settings: a change of role or password makes
    another digest, and so ends the sessions started before it."""
    return hashlib.sha256(f"{name}\0{role}\0{password_hash or ''}".encode()).digest()


def start_session(
    conn: psycopg.Connection[Any],
    token: str,
    user_name: str,
    via: Via,
    credential: bytes,
    max_seconds: float,
) -> None:
    conn.execute(
        QUERIES["start_session"],
        {
            "id": _id(token),
            "user_name": user_name,
            "via": via,
            "credential": credential,
            "max_seconds": max_seconds,
        },
    )


def touch_session(
    conn: psycopg.Connection[Any],
    token: str,
    user_name: str,
    credential: bytes,
    idle_seconds: float,
) -> bool:
    """Whether the session is alive (then its idle clock starts again)."""
    row = conn.execute(
        QUERIES["touch_session"],
        {
            "id": _id(token),
            "user_name": user_name,
            "credential": credential,
            "idle_seconds": idle_seconds,
        },
    ).fetchone()
    return row is not None


def end_session(conn: psycopg.Connection[Any], token: str) -> None:
    conn.execute(QUERIES["end_session"], {"id": _id(token)})
