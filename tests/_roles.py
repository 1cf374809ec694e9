"""Login roles that hold one least-privilege group role each (``inbox db roles``' grants).

Two users: tests/security makes a set per test in the test's own database; the least-roles
mode (``INBOX_TEST_ROLES=least``) makes one set per session in the migrated template, so
every database cloned from it carries the grants, and the receiver and worker tests run
their code under test as those roles (the ``receiver_url`` and ``worker_url`` fixtures).

Roles are cluster-wide: every name carries a random prefix, and every role is dropped
afterwards.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, replace

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from inbox._core.database.roles import PARTS, RoleNames, grant_roles

MODE_VARIABLE = "INBOX_TEST_ROLES"


def least_roles_mode() -> bool:
    """True when the suite runs its code under test as the least roles."""
    mode = os.environ.get(MODE_VARIABLE, "admin")
    if mode not in ("admin", "least"):
        raise pytest.UsageError(f"{MODE_VARIABLE}={mode!r}: use 'admin' (the default) or 'least'")
    return mode == "least"


@dataclass(frozen=True)
class Roles:
    names: RoleNames
    admin_url: str  # the database whose URLs ``url`` gives

    @classmethod
    def random(cls, admin_url: str) -> Roles:
        return cls(RoleNames(prefix=f"t{uuid.uuid4().hex[:10]}"), admin_url)

    def on(self, admin_url: str) -> Roles:
        """The same roles, their URLs on another database (a clone of this one)."""
        return replace(self, admin_url=admin_url)

    def login(self, part: str) -> str:
        return f"{self.names.of(part)}_login"

    def url(self, part: str) -> str:
        """A connection string logging in as a role that holds only ``part``'s group role
        (the test servers trust their local connections: no password)."""
        params = conninfo_to_dict(self.admin_url)
        params["user"] = self.login(part)
        params.pop("password", None)
        return make_conninfo(**params)  # type: ignore[arg-type]

    def create(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        """The group roles with their grants in ``conn``'s database, and a login per part."""
        grant_roles(conn, self.names)  # type: ignore[arg-type]
        for part in PARTS:
            conn.execute(
                sql.SQL("create role {} login in role {}").format(
                    sql.Identifier(self.login(part)), sql.Identifier(self.names.of(part))
                )
            )

    def drop(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        """Drop every role, with its privileges in ``conn``'s database (it has none left in
        any other: the databases it was granted in are gone). Roles never made are skipped."""
        wanted = [name for part in PARTS for name in (self.login(part), self.names.of(part))]
        made = {
            row[0]
            for row in conn.execute(
                "select rolname from pg_roles where rolname = any(%s)", [wanted]
            ).fetchall()
        }
        for role in wanted:
            if role in made:
                conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
                conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def part_url(db_url: str, roles: Roles | None, part: str) -> str:
    """The URL ``part``'s code under test connects to ``db_url`` with: ``db_url`` itself,
    or in least-roles mode the session's login for that part."""
    return db_url if roles is None else roles.on(db_url).url(part)


def grant_business_tables(conn: psycopg.Connection[tuple[object, ...]], roles: Roles) -> None:
    """Tables a test makes later for its handlers' writes (``payments``), the worker may
    use: what a DBA grants the worker's role on the business tables (default privileges
    for what the connected role creates in ``public``)."""
    worker = sql.Identifier(roles.names.of("worker"))
    conn.execute(
        sql.SQL(
            "alter default privileges in schema public"
            " grant select, insert, update, delete on tables to {}"
        ).format(worker)
    )
    conn.execute(
        sql.SQL("alter default privileges in schema public grant usage on sequences to {}").format(
            worker
        )
    )
