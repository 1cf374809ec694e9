"""``inbox dev``: the main job on the embedded default, for a first run and for development."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from inbox._runtime import database_url
from inbox._settings import Settings

__all__ = ["register"]


def _dev(args: argparse.Namespace, settings: Settings) -> int:
    from inbox import _migrate  # alembic is heavy: loaded by the commands that use it

    with database_url(settings) as url:
        _migrate.upgrade(url)
        print(f"pg-inbox dev: database ready at revision {_migrate.current_revision(url)}")
        print(f"  connection: {url}")
        print("  Ctrl-C stops it; the data stays in", settings.database.data_dir)
        _wait_for_stop()
    return 0


def _wait_for_stop() -> None:
    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    stop.wait()


def register(commands: Any) -> None:
    dev = commands.add_parser(
        "dev", help="run everything on the embedded PostgreSQL (no database URL needed)"
    )
    dev.set_defaults(handler=_dev)
