"""The ``inbox`` command line. Subcommands of the processing side (``worker``, ``replay``)
are registered through the ``pg_inbox.cli`` entry points, so ``inbox`` never imports
``processors``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version
from typing import NoReturn

from inbox._cli.logs import configure_logging, say
from inbox._core.config.settings import Settings, load_settings, settings_file
from inbox._core.errors import ConfigError, DatabaseUnavailableError, InboxError
from inbox._core.runtime.resolve import database_url

__all__ = ["main"]

Command = Callable[[argparse.Namespace, Settings], int]

# Commands that run until stopped: their log lines are their output. The others print their
# result for a person, and log only warnings and errors next to it.
_DAEMONS = frozenset({"dev", "serve", "worker", "console"})


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line saying what was wrong and where to read more."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _version() -> str:
    try:
        return version("pg-inbox")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _one_line(message: str) -> str:
    """psycopg's and pydantic's messages span lines; an error on a terminal is one."""
    return "; ".join(part.strip() for part in message.splitlines() if part.strip())


def _db_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    # alembic is heavy: loaded by the commands that use it
    from inbox._core.database import migrate as _migrate

    with database_url(settings, say=say) as url:
        _migrate.upgrade(url, args.revision, retention=settings.retention)
        print(f"database at revision {_migrate.current_revision(url)}")
    return 0


def _db_downgrade(args: argparse.Namespace, settings: Settings) -> int:
    # alembic is heavy: loaded by the commands that use it
    from inbox._core.database import migrate as _migrate

    with database_url(settings, say=say) as url:
        _migrate.downgrade(url, args.revision)
        print(f"database at revision {_migrate.current_revision(url) or 'base (empty)'}")
    return 0


def _db_current(args: argparse.Namespace, settings: Settings) -> int:
    # alembic is heavy: loaded by the commands that use it
    from inbox._core.database import migrate as _migrate

    with database_url(settings, say=say) as url:
        current = _migrate.current_revision(url)
        head = _migrate.head_revision()
        state = "up to date" if current == head else f"behind head {head}"
        print(f"{current or 'base (empty)'} ({state})")
    return 0 if current == head else 1


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="inbox", description="pg-inbox: a durable webhook inbox on PostgreSQL")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--config", help="TOML settings file (default: $INBOX_CONFIG or ./inbox.toml)"
    )
    parser.add_argument(
        "--log-format",
        choices=("auto", "console", "json"),
        default="auto",
        help="logs on stderr: readable (console) or JSON lines;"
        " auto (default) = console on a terminal, else JSON",
    )
    parser.add_argument("--dev", action="store_true", help="the same as --log-format console")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    db = commands.add_parser("db", help="schema migrations").add_subparsers(
        dest="db_command", required=True, metavar="ACTION"
    )
    up = db.add_parser("upgrade", help="migrate to the latest revision (or REVISION)")
    up.add_argument("revision", nargs="?", default="head")
    up.set_defaults(handler=_db_upgrade)
    down = db.add_parser("downgrade", help="migrate down to REVISION ('base' = empty)")
    down.add_argument("revision")
    down.set_defaults(handler=_db_downgrade)
    db.add_parser("current", help="show the database's revision").set_defaults(handler=_db_current)
    from inbox._cli.security import register as register_security

    register_security(commands, db)

    from inbox._cli.dev import register as register_dev

    register_dev(commands)
    from inbox._cli.init import register as register_init

    register_init(commands)
    from inbox._cli.receiver import register as register_receiver

    register_receiver(commands)
    from inbox._cli.operator import register as register_operator

    register_operator(commands)
    from inbox._cli.console import register as register_console

    register_console(commands)
    from inbox._cli.replay import register as register_replay

    register_replay(commands)
    from inbox._cli.providers import register as register_providers

    register_providers(commands)
    for plugin in entry_points(group="pg_inbox.cli"):
        try:
            register = plugin.load()
        except ImportError as exc:
            # An installed plugin that does not import (a stale install, a missing extra)
            # must not take the receiving side's commands down with it.
            print(f"inbox: warning: commands of {plugin.value} unavailable: {exc}", file=sys.stderr)
            continue
        register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    log_format = args.log_format
    if log_format == "auto" and (args.dev or args.command == "dev"):
        log_format = "console"
    configure_logging(
        console=sys.stderr.isatty() if log_format == "auto" else log_format == "console",
        level=logging.INFO if args.command in _DAEMONS else logging.WARNING,
    )
    try:
        settings = load_settings(args.config)
        handler: Command = args.handler
        return handler(args, settings)
    except ConfigError as exc:
        message = str(exc)
        if exc.path is None and (exc.field or "").startswith("sources."):
            # A source's settings were valid alone, but not for its verifier: say which file.
            path = settings_file(args.config)
            message = f"{path}: {message}" if path else message
        print(f"inbox: error: {_one_line(message)}", file=sys.stderr)
        return 2
    except DatabaseUnavailableError as exc:
        print(
            f"inbox: error: {_one_line(str(exc))} (the URL comes from INBOX_DATABASE_URL,"
            " else [database] url in the settings file)",
            file=sys.stderr,
        )
        return 2
    except InboxError as exc:
        print(f"inbox: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `inbox events list | head`: the reader left. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again (Python docs, "Note on SIGPIPE").
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
