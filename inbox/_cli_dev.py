"""``inbox dev``: the main job on the embedded default — the database, the receiver and a
worker with the example handlers, in one command."""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from inbox._runtime import database_url
from inbox._settings import Settings

__all__ = ["register"]

DEFAULT_APP = "examples.handlers:router"
EXAMPLES_SCHEMA = Path("examples") / "schema.sql"


def _start_worker(args: argparse.Namespace, url: str) -> subprocess.Popen[bytes]:
    # A separate process: `inbox` never imports `processors`, and this is how workers run
    # in production too.
    command = [sys.executable, "-m", "inbox", "--dev"]
    if args.config:
        command += ["--config", args.config]
    command += ["worker", "--app", args.app, "--concurrency", str(args.concurrency)]
    # The command is this interpreter running pg-inbox itself, with the user's own options.
    return subprocess.Popen(command, env={**os.environ, "INBOX_DATABASE__URL": url})  # noqa: S603


def _apply_examples_schema(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(EXAMPLES_SCHEMA.read_text(encoding="utf-8").encode())


def _banner(settings: Settings, url: str, host: str, port: int, config: str | None) -> str:
    cfg = f" --config {config}" if config else ""
    lines = [
        "",
        "pg-inbox dev is running",
        f"  receiver   http://{host}:{port}/webhooks/{{source}}   (health: /healthz, /metrics)",
        f"  database   {url}",
        f"  sources    {', '.join(s.name for s in settings.sources) or '(none configured)'}",
        "  send a signed test webhook from another terminal:",
        f"    .venv/bin/inbox{cfg} send stripe",
        "  then look at what happened to it (this process owns the embedded server, so",
        "  other commands reach it by its URL):",
        f"    INBOX_DATABASE_URL='{url}' .venv/bin/inbox{cfg} events list",
        "  Ctrl-C stops everything; the data stays in " + str(settings.database.data_dir),
        "",
    ]
    return "\n".join(lines)


def _dev(args: argparse.Namespace, settings: Settings) -> int:
    from inbox import _migrate  # alembic is heavy: loaded by the commands that use it
    from inbox._asgi import create_app
    from inbox._cli_receiver import run_receiver

    host, port = settings.receiver.host, settings.receiver.port
    with database_url(settings) as url:
        _migrate.upgrade(url)
        if args.app == DEFAULT_APP and EXAMPLES_SCHEMA.exists():
            _apply_examples_schema(url)
        app = create_app(settings, dsn=url)
        worker = _start_worker(args, url)
        try:
            print(_banner(settings, url, host, port, args.config), flush=True)
            # uvicorn re-raises Ctrl-C after its graceful shutdown: here, a normal stop.
            with contextlib.suppress(KeyboardInterrupt):
                run_receiver(app, host, port)
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
    return 0


def register(commands: Any) -> None:
    dev = commands.add_parser(
        "dev",
        help="run the receiver and a worker on the embedded PostgreSQL (no database needed)",
    )
    dev.add_argument(
        "--app",
        default=DEFAULT_APP,
        help=f"the worker's Router as module:attribute (default {DEFAULT_APP})",
    )
    dev.add_argument("--concurrency", type=int, default=2, help="claim loops of the worker")
    dev.set_defaults(handler=_dev)
