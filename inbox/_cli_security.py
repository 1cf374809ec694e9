"""``inbox db roles``: the least-privilege group roles (see docs/security.md)."""

from __future__ import annotations

import argparse
from typing import Any

import psycopg

from inbox._db import translate_driver_errors
from inbox._errors import ConfigError
from inbox._roles import PARTS, RoleNames, grant_roles, roles_sql
from inbox._runtime import database_url
from inbox._settings import Settings

__all__ = ["register"]


def _roles(args: argparse.Namespace, settings: Settings) -> int:
    names = RoleNames(prefix=args.prefix, schema=args.schema)
    if args.sql:
        print(roles_sql(names), end="")
        return 0
    with (
        database_url(settings) as url,
        translate_driver_errors("create the inbox roles"),
        psycopg.connect(url, application_name="pg-inbox roles") as conn,
    ):
        try:
            grant_roles(conn, names)
        except psycopg.errors.InsufficientPrivilege as exc:
            raise ConfigError(
                f"inbox db roles: {exc.diag.message_primary or exc}; run it as the inbox"
                " tables' owner or a superuser (or print the SQL with --sql for a DBA)"
            ) from exc
    listed = ", ".join(names.of(part) for part in PARTS)
    print(f"roles ready (no login; grant them to login roles): {listed}")
    return 0


def register(db: Any) -> None:
    roles = db.add_parser(
        "roles",
        help="create the least-privilege group roles and their grants (idempotent)",
        description="Create the group roles (no login) <prefix>_owner, _receiver, _worker,"
        " _operator and _retention, and grant each exactly what its part needs. Run after"
        " `inbox db upgrade`, as the tables' owner or a superuser. See docs/security.md.",
    )
    roles.add_argument("--prefix", default="inbox", help="role name prefix (default: inbox)")
    roles.add_argument("--schema", default="public", help="schema of the inbox tables")
    roles.add_argument(
        "--sql", action="store_true", help="print the SQL for a DBA instead of running it"
    )
    roles.set_defaults(handler=_roles)
