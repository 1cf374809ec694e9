"""``inbox dev``: the main job on the embedded default — the database, the receiver and a
worker, in one command, from an installed package in any folder.

In a folder without settings it runs the built-in demo (``.inbox/demo.toml``, the example
handlers of ``processors.examples``); with an ``inbox.toml`` (or ``--config``) it runs the
user's sources, ``[app] router`` and ``[app] tables``. Sources without a secret get a
development one (``env``). The run itself (``run``): every way it ends — Ctrl-C, SIGTERM,
the terminal closed, a failure at start-up, the worker dying, ``inbox dev`` killed (its
``guard``) — stops everything it started. The worker restarts when the handlers' files
change (``worker``).
"""

from __future__ import annotations

import argparse
from typing import Any

from inbox._cli.dev.env import EXAMPLES_ROUTER
from inbox._core.config.settings import Settings
from inbox._core.runtime.arguments import port, positive_int

__all__ = ["register"]


def _dev(args: argparse.Namespace, settings: Settings) -> int:
    from inbox._cli.dev.run import run_dev

    return run_dev(args, settings)


def register(commands: Any) -> None:
    dev = commands.add_parser(
        "dev",
        help="run the receiver and a worker on the embedded PostgreSQL (no database needed)",
    )
    dev.add_argument(
        "--app",
        help="the worker's Router as module:attribute (default: [app] router, else the"
        f" built-in {EXAMPLES_ROUTER})",
    )
    dev.add_argument(
        "--concurrency", type=positive_int, default=2, help="claim loops of the worker"
    )
    dev.add_argument("--host", help="the receiver's interface (default: [receiver] host)")
    dev.add_argument(
        "--port", type=port, help="the receiver's port (default: [receiver] port; 0: any free)"
    )
    dev.set_defaults(handler=_dev)
