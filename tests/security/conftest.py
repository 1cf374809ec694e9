"""Login roles holding one least-privilege group role each, in the test's database.

Roles are cluster-wide: every name carries a per-test suffix, and every role is dropped
after the test (its privileges in the test database first).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from inbox._core.roles import PARTS, RoleNames, grant_roles


@dataclass(frozen=True)
class Roles:
    names: RoleNames
    admin_url: str

    def login(self, part: str) -> str:
        return f"{self.names.of(part)}_login"

    def url(self, part: str) -> str:
        """A connection string logging in as a role that holds only ``part``'s group role."""
        params = conninfo_to_dict(self.admin_url)
        params["user"] = self.login(part)
        params.pop("password", None)
        return make_conninfo(**params)  # type: ignore[arg-type]


@pytest.fixture
def roles(db_url: str) -> Iterator[Roles]:
    names = RoleNames(prefix=f"t{uuid.uuid4().hex[:10]}")
    made = Roles(names, db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        grant_roles(conn, names)
        for part in PARTS:
            conn.execute(
                sql.SQL("create role {} login in role {}").format(
                    sql.Identifier(made.login(part)), sql.Identifier(names.of(part))
                )
            )
    try:
        yield made
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            for part in PARTS:
                for role in (made.login(part), names.of(part)):
                    conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
                    conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
