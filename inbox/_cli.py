"""The ``inbox`` command line. Subcommands of the processing side (``worker``, ``replay``)
are registered through the ``pg_inbox.cli`` entry points, so ``inbox`` never imports
``processors``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from inbox._errors import InboxError
from inbox._logging import configure_logging
from inbox._runtime import database_url
from inbox._settings import Settings, load_settings

__all__ = ["main"]

Command = Callable[[argparse.Namespace, Settings], int]


def _db_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    from inbox import _migrate  # alembic is heavy: loaded by the commands that use it

    with database_url(settings) as url:
        _migrate.upgrade(url, args.revision)
        print(f"database at revision {_migrate.current_revision(url)}")
    return 0


def _db_downgrade(args: argparse.Namespace, settings: Settings) -> int:
    from inbox import _migrate  # alembic is heavy: loaded by the commands that use it

    with database_url(settings) as url:
        _migrate.downgrade(url, args.revision)
        print(f"database at revision {_migrate.current_revision(url) or 'base (empty)'}")
    return 0


def _db_current(args: argparse.Namespace, settings: Settings) -> int:
    from inbox import _migrate  # alembic is heavy: loaded by the commands that use it

    with database_url(settings) as url:
        current = _migrate.current_revision(url)
        head = _migrate.head_revision()
        state = "up to date" if current == head else f"behind head {head}"
        print(f"{current or 'base (empty)'} ({state})")
    return 0 if current == head else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inbox", description="pg-inbox: a durable webhook inbox on PostgreSQL"
    )
    parser.add_argument(
        "--config", help="TOML settings file (default: $INBOX_CONFIG or ./inbox.toml)"
    )
    parser.add_argument("--dev", action="store_true", help="readable console logs instead of JSON")
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

    from inbox._cli_dev import register as register_dev

    register_dev(commands)
    from inbox._cli_receiver import register as register_receiver

    register_receiver(commands)
    from inbox._cli_operator import register as register_operator

    register_operator(commands)
    from inbox._cli_console import register as register_console

    register_console(commands)
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
    configure_logging(dev=args.dev or args.command == "dev")
    try:
        settings = load_settings(args.config)
        handler: Command = args.handler
        return handler(args, settings)
    except InboxError as exc:
        print(f"inbox: error: {exc}", file=sys.stderr)
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
