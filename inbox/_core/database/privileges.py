"""What each part needs from its database role, checked when the part starts: a role that
lacks a grant makes the part refuse to start with the GRANT to run, instead of failing at
the first webhook. The needs mirror the grants of ``inbox/sql/roles.sql``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import psycopg

from inbox._core.database.db import translate_driver_errors
from inbox._core.errors import ConfigError, DatabaseUnavailableError
from inbox._core.logs import get_logger
from inbox._core.sql import load_queries

__all__ = ["NEEDS", "Need", "missing_privileges", "require_privileges"]

log = get_logger("inbox.privileges")


class Need(NamedTuple):
    kind: str  # table, column, sequence or function
    object: str
    column: str | None
    privilege: str

    def grant(self, role: str) -> str:
        if self.kind == "column":
            return f"GRANT {self.privilege} ({self.column}) ON {self.object} TO {role}"
        if self.kind == "table":
            return f"GRANT {self.privilege} ON {self.object} TO {role}"
        return f"GRANT {self.privilege} ON {self.kind.upper()} {self.object} TO {role}"

    def describe(self) -> str:
        column = f" ({self.column})" if self.column else ""
        return f"{self.privilege} on {self.object}{column}"


def _columns(table: str, privilege: str, columns: str) -> list[Need]:
    return [Need("column", table, column, privilege) for column in columns.split()]


def _tables(privileges: str, *tables: str) -> list[Need]:
    return [Need("table", t, None, p) for t in tables for p in privileges.split()]


_ALL_TABLES = (
    "inbox_events",
    "inbox_work",
    "inbox_attempts",
    "inbox_deliveries",
    "inbox_claims",
    "inbox_replays",
    "inbox_prunes",
    "inbox_workers",
    "inbox_keys",
    "inbox_partitions",
    "inbox_retention",
)

NEEDS: dict[str, list[Need]] = {
    "receiver": [
        Need(
            "function",
            "inbox_write_event(text, text, text, text, jsonb, bytea, bytea, text, timestamptz,"
            " text, text, text, timestamptz, boolean)",
            None,
            "EXECUTE",
        ),
        Need(
            "function",
            "inbox_write_events(text[], text[], text[], text[], jsonb[], bytea[], bytea[],"
            " text[], timestamptz[], text[], text[], text[], timestamptz[])",
            None,
            "EXECUTE",
        ),
        Need("function", "inbox_partition_for(timestamptz)", None, "EXECUTE"),
        Need("function", "inbox_record_delivery(text, text, bytea, bytea)", None, "EXECUTE"),
    ],
    "worker": [
        # The whole row of an event, its trace context included (a handler span's link).
        *_tables("SELECT", "inbox_events", "alembic_version"),
        *_tables("SELECT INSERT", "inbox_attempts"),
        *_tables("SELECT UPDATE DELETE", "inbox_work"),
        *_tables("SELECT INSERT UPDATE DELETE", "inbox_claims", "inbox_workers"),
        *_tables("SELECT", "inbox_partitions"),
        Need("function", "inbox_ensure_partitions()", None, "EXECUTE"),
        Need("function", "inbox_partition_for(timestamptz)", None, "EXECUTE"),
        *_tables("SELECT", "inbox_rehearsal_requests"),
        *_columns("inbox_rehearsal_requests", "UPDATE", "state done report"),
    ],
    "operator": [
        *_tables("SELECT", *_ALL_TABLES),
        Need("function", "inbox_dead_skip(bigint[], text, text, text, jsonb)", None, "EXECUTE"),
        Need(
            "function",
            "inbox_replay_begin(text, text, text, jsonb, integer, integer, float8, text, text)",
            None,
            "EXECUTE",
        ),
        Need("function", "inbox_replay_enqueue(bigint, bigint[], bigint)", None, "EXECUTE"),
        *_tables("SELECT", "inbox_rehearsal_requests"),
        Need(
            "function",
            "inbox_rehearsal_request(text, text, jsonb, bigint[], jsonb, float8, text)",
            None,
            "EXECUTE",
        ),
        *_tables(
            "SELECT INSERT UPDATE DELETE",
            "inbox_console_sessions",
            "inbox_console_signin_attempts",
        ),
    ],
    "retention": [
        Need("function", "inbox_prune(float8, text, text)", None, "EXECUTE"),
        Need("function", "inbox_prune_preview(float8)", None, "EXECUTE"),
        Need("function", "inbox_drop_pruned()", None, "EXECUTE"),
    ],
}


def missing_privileges(conn: psycopg.Connection[Any], part: str) -> tuple[str, list[Need]]:
    """The connected role's name and the needs of ``part`` it lacks (empty: all granted)."""
    needs = NEEDS[part]
    rows = conn.execute(
        load_queries("inbox.sql", "roles.sql")["missing_privileges"],
        {
            "kinds": [n.kind for n in needs],
            "objects": [n.object for n in needs],
            "columns": [n.column for n in needs],
            "privileges": [n.privilege for n in needs],
        },
    ).fetchall()
    if not rows:
        [(role,)] = conn.execute("select current_user::text").fetchall()
        return str(role), []
    return str(rows[0][4]), [Need(*row[:4]) for row in rows]


def require_privileges(url: str, part: str, command: str, *, prefix: str = "inbox") -> None:
    """Refuse to start ``command`` when its role lacks any of ``part``'s needs."""
    try:
        with (
            translate_driver_errors(f"{command}: checking the {part}'s privileges"),
            psycopg.connect(
                url, application_name=f"pg-inbox {part} check", connect_timeout=5
            ) as conn,
        ):
            role, missing = missing_privileges(conn, part)
    except DatabaseUnavailableError as exc:
        # A part starts through an outage (the receiver answers 503 until the database is
        # back): an unreachable database is not a reason to refuse, only to skip the check.
        log.warning("privileges_unchecked", part=part, error=str(exc))
        return
    if not missing:
        return
    quoted = '"' + role.replace('"', '""') + '"'
    lacks = ", ".join(need.describe() for need in missing)
    raise ConfigError(
        f"{command}: the database role {quoted} lacks {lacks}, which the {part} needs;"
        f" a DBA runs: GRANT {prefix}_{part} TO {quoted}; (the group role from `inbox db"
        f" roles`), or at least: {missing[0].grant(quoted)};",
        field=f"database.{part}_url",
    )
