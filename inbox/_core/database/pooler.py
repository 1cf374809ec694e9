"""Connections through a transaction pooler: PgBouncer in ``pool_mode = transaction``,
Supabase's and Neon's pooled URLs, RDS Proxy.

Behind one, a client's session is a different server session from one transaction to the
next. So a part that connects through it sends no startup ``options`` (PgBouncer refuses
them), prepares no server-side statements (psycopg's names would meet another client's
session), sets what it needs per transaction only (``set_config(..., true)``: nothing
outlives the transaction on a shared server connection), and does not LISTEN (a
notification reaches whichever client holds the server connection, if any).

``[database] pooler`` says which: ``"none"``, ``"transaction"``, or ``"auto"``, which takes
the URL for a pooler's where it says so by convention (PgBouncer's port 6432, Supabase's
6543, a host named ``...pooler...`` as Neon's and Supabase's are, RDS Proxy's
``.proxy-``). ``[database] prepared_statements`` turns psycopg's prepared statements back
on behind a pooler that keeps them per client (PgBouncer 1.21 and later with
``max_prepared_statements``), or off everywhere. psycopg is imported only by the functions
that need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "PoolerMode",
    "PreparedMode",
    "behind_pooler",
    "connect_kwargs",
    "looks_pooled",
    "pooler_hint",
    "settings_statement",
    "startup_options",
]

PoolerMode = Literal["auto", "none", "transaction"]
# "auto": psycopg's (prepared after a few runs) direct, none behind a transaction pooler.
PreparedMode = Literal["auto", "on", "off"]

POOLER_PORTS = frozenset({"6432", "6543"})
POOLER_HOST_MARKS = ("pooler", ".proxy-")

# What poolers answer when a client assumes a session of its own, and what each means.
_SYMPTOMS = (
    ("unsupported startup parameter", "the pooler refuses startup options"),
    ('prepared statement "_pg3_', "a prepared statement met another session"),
    ("bind message supplies", "a prepared statement met another session"),
)
POOLER_FIX = 'set [database] pooler = "transaction" (INBOX_DATABASE__POOLER) for this URL'


def looks_pooled(url: str) -> bool:
    """Whether ``url`` reaches PostgreSQL through a pooler, by the conventions above."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - a bad URL is the settings' error, reported there
        return False
    ports = str(params.get("port") or "").split(",")
    hosts = str(params.get("host") or "").lower().split(",")
    return any(p.strip() in POOLER_PORTS for p in ports) or any(
        mark in host for host in hosts for mark in POOLER_HOST_MARKS
    )


def behind_pooler(mode: PoolerMode, url: str) -> bool:
    """Whether a part connecting to ``url`` under ``[database] pooler = mode`` is pooled."""
    return mode == "transaction" or (mode == "auto" and looks_pooled(url))


def connect_kwargs(pooled: bool, prepared: PreparedMode = "auto") -> dict[str, Any]:
    """psycopg's connection arguments for the mode: no prepared statements when pooled,
    unless ``prepared`` says on; none at all when it says off."""
    if prepared == "off" or (prepared == "auto" and pooled):
        return {"prepare_threshold": None}
    return {}


def startup_options(pooled: bool, settings: Mapping[str, str]) -> dict[str, Any]:
    """The startup ``options`` that set ``settings`` for a whole session: none when pooled
    (the pooler would refuse them; a pooled part sets them per transaction instead)."""
    if pooled or not settings:
        return {}
    return {"options": " ".join(f"-c {name}={value}" for name, value in settings.items())}


def settings_statement(settings: Mapping[str, str], *, local: bool) -> Any:
    """One statement that sets ``settings``: for the transaction (``local``) or the session.
    Names and values are the caller's own constants, composed as SQL literals."""
    from psycopg import sql

    return sql.SQL("select {}").format(
        sql.SQL(", ").join(
            sql.SQL("set_config({}, {}, {})").format(
                sql.Literal(name), sql.Literal(value), sql.Literal(local)
            )
            for name, value in settings.items()
        )
    )


def pooler_hint(error: BaseException | str | None) -> str | None:
    """The fix when ``error`` is what a transaction pooler answers a session-minded client."""
    text = str(error or "")
    for symptom, meaning in _SYMPTOMS:
        if symptom in text:
            return f"{meaning}: {POOLER_FIX}"
    return None
