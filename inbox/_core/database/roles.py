"""Least privilege: the group roles of ``inbox db roles`` and the SQL that grants each
exactly what its part needs (``inbox/sql/roles.sql``).

Role and schema names are identifiers, composed with ``psycopg.sql`` from a checked
prefix, never formatted into the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg
from psycopg import sql

from inbox._core.errors import ConfigError
from inbox._core.sql import load_queries

__all__ = ["PARTS", "RoleNames", "grant_roles", "roles_sql"]

PARTS = ("owner", "receiver", "worker", "operator", "retention")

# The blocks of roles.sql in the order they run: roles first, then a clean slate, then
# the grants of each part.
_BLOCKS = ("create_roles", "reset", "schema", "receiver", "worker", "operator", "retention")

# A prefix becomes part of role names: plain lower-case letters, digits and underscores
# keep the names readable unquoted in a DBA's GRANT, and short enough that every
# `<prefix>_retention` fits PostgreSQL's 63-byte identifiers.
_PREFIX = re.compile(r"[a-z][a-z0-9_]{0,40}")


@dataclass(frozen=True)
class RoleNames:
    prefix: str = "inbox"
    schema: str = "public"

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise ConfigError(
                f"bad role prefix {self.prefix!r}: use 1-41 lower-case letters, digits or"
                " underscores, starting with a letter (e.g. inbox or payments_inbox)",
                field="prefix",
            )

    def of(self, part: str) -> str:
        return f"{self.prefix}_{part}"

    def _identifiers(self) -> dict[str, sql.Composable]:
        names: dict[str, sql.Composable] = {"schema": sql.Identifier(self.schema)}
        for part in PARTS:
            names[part] = sql.Identifier(self.of(part))
            names[f"{part}_name"] = sql.Literal(self.of(part))
        return names


def _statements(names: RoleNames) -> list[sql.Composed]:
    queries = load_queries("inbox.sql", "roles.sql")
    identifiers = names._identifiers()
    return [sql.SQL(queries[block]).format(**identifiers) for block in _BLOCKS]


def roles_sql(names: RoleNames) -> str:
    """The whole script, for a DBA to read and run (``inbox db roles --sql``)."""
    parts = [statement.as_string() for statement in _statements(names)]
    return "begin;\n" + ";\n\n".join(parts) + ";\ncommit;\n"


def grant_roles(conn: psycopg.Connection[object], names: RoleNames) -> None:
    """Create the roles that are missing and make their grants exact, in one transaction."""
    with conn.transaction():
        for statement in _statements(names):
            conn.execute(statement)
