"""``inbox db roles``: the least-privilege group roles (see docs/security.md)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import psycopg

from inbox._cli.logs import say
from inbox._core.config.settings import Settings
from inbox._core.database.db import translate_driver_errors
from inbox._core.database.roles import PARTS, RoleNames, grant_roles, roles_sql
from inbox._core.errors import ConfigError
from inbox._core.runtime.resolve import database_url

__all__ = ["register"]


def _roles(args: argparse.Namespace, settings: Settings) -> int:
    names = RoleNames(prefix=args.prefix, schema=args.schema)
    if args.sql:
        print(roles_sql(names), end="")
        return 0
    with (
        database_url(settings, say=say) as url,
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


def _config_check(args: argparse.Namespace, settings: Settings) -> int:
    from inbox._core.config.secrets import config_report
    from inbox._receiving.source_config import source_verifier, source_verify_token

    for source in settings.sources:
        source_verifier(source)  # a source that cannot verify is a ConfigError, exit 2
        source_verify_token(source)  # nor one whose GET handshake cannot find its token
    where = settings.config_file or "no config file"
    print(f"effective configuration ({where}; secrets redacted):")
    for name, value, origin in config_report(settings.model_dump(), settings.config_file):
        print(f"  {name} = {json.dumps(value, default=str)}  [{origin}]")
    for source in settings.sources:
        print(f"  sources.{source.name}: {len(source.secret_values())} active secret(s)")
    print("configuration OK")
    return 0


def register(commands: Any, db: Any) -> None:
    config = commands.add_parser("config", help="inspect the configuration").add_subparsers(
        dest="config_command", required=True, metavar="ACTION"
    )
    config.add_parser(
        "check",
        help="validate the configuration and print it, secrets redacted, with each value's origin",
    ).set_defaults(handler=_config_check)

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
