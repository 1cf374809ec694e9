"""``inbox dev``: the main job on the embedded default — the database, the receiver and a
worker, in one command, from an installed package in any folder.

In a folder without settings it runs the built-in demo (``.inbox/demo.toml``, the example
handlers of ``processors.examples``); with an ``inbox.toml`` (or ``--config``) it runs the
user's sources, ``[app] router`` and ``[app] tables``. Sources without a secret get a
development one (see ``inbox._cli.devenv``). Every way it ends — Ctrl-C, SIGTERM, a failure at
start-up, the worker dying — stops the embedded server it started.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inbox._cli.devenv import (
    EXAMPLES_ROUTER,
    apply_sql,
    examples_schema,
    inbox_command,
    sql_files,
    with_dev_secrets,
    write_demo_config,
)
from inbox._cli.logs import say
from inbox._core.errors import ConfigError
from inbox._core.extras import require_extra
from inbox._core.logs import get_logger
from inbox._core.runtime import database_url
from inbox._core.settings import DEFAULT_CONFIG_PATH, Settings, load_settings, settings_file

__all__ = ["register"]

log = get_logger("inbox.dev")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What this run serves, decided (and checked) before anything starts."""

    settings: Settings
    config: Path  # the settings file of this run
    banner_config: Path | None  # what the other commands need as --config (None: found alone)
    router: str
    router_origin: str  # where `router` came from, for messages
    schema: list[Path]
    dev_secrets: list[str]  # sources that got a development secret


def _plan(args: argparse.Namespace, settings: Settings) -> _Plan:
    config = settings_file(args.config)
    if config is None:
        # An empty folder: the built-in demo, as a config file the other commands can use.
        config = write_demo_config(settings)
        settings = load_settings(config)
    settings, filled = with_dev_secrets(settings, create=True)
    if args.app:
        router, origin = args.app, "--app"
    elif settings.app.router:
        router, origin = settings.app.router, f"[app] router in {config}"
    else:
        router, origin = EXAMPLES_ROUTER, f"the built-in examples ({config} sets no [app] router)"
    schema = [_schema_file(p, config) for p in settings.app.tables]
    if router == EXAMPLES_ROUTER:
        schema.insert(0, examples_schema())
    files = sql_files(schema)
    # ./inbox.toml is found by every command run in this folder; anything else must be named.
    found_alone = args.config is None and not os.environ.get("INBOX_CONFIG")
    found_alone = found_alone and config == DEFAULT_CONFIG_PATH
    shown = None if found_alone else config
    return _Plan(settings, config, shown, router, origin, files, filled)


def _schema_file(path: Path, config: Path) -> Path:
    if not path.exists():
        raise ConfigError(f"[app] tables in {config}: {path} does not exist", path=str(config))
    return path


def _inbox(plan: _Plan, *args: str) -> list[str]:
    # This interpreter running pg-inbox itself (not a PATH lookup), with the plan's config.
    return [sys.executable, "-m", "inbox", "--config", str(plan.config), *args]


def _check_handlers(plan: _Plan) -> None:
    """Import the handlers in a process of their own (``inbox`` never imports
    ``processors``) before the database starts, so a typo costs no server start-up."""
    checked = subprocess.run(  # noqa: S603 - our own interpreter and module
        _inbox(plan, "worker", "--app", plan.router, "--check"),
        capture_output=True,
        text=True,
        check=False,
    )
    if checked.returncode != 0:
        lines = (checked.stderr or checked.stdout).strip().splitlines() or ["(no output)"]
        detail = lines[-1].removeprefix("inbox: error: ")
        raise ConfigError(
            f"the handlers {plan.router} (from {plan.router_origin}) do not load: {detail}"
        )


def _start_worker(plan: _Plan, args: argparse.Namespace, url: str) -> subprocess.Popen[bytes]:
    # A separate process, as workers run in production.
    command = _inbox(plan, "--dev", "worker", "--app", plan.router)
    command += ["--concurrency", str(args.concurrency)]
    env = {**os.environ, "INBOX_DATABASE__URL": url}
    return subprocess.Popen(command, env=env)  # noqa: S603 - our own interpreter and module


def _dev_app(settings: Settings, url: str) -> tuple[Any, list[tuple[str, str]]]:
    """The ASGI app ``inbox dev`` serves, and the banner lines of what it mounts besides the
    receiver: ``(label, text)``. This is the one place where more apps (the operator
    console) are mounted into ``inbox dev``."""
    from inbox.contrib._asgi import create_app

    receiver = create_app(settings, dsn=url)
    try:
        from inbox.console import mount_for_dev
    except ImportError:  # a light install: the receiver and worker still run
        return receiver, [("console", "needs the console extra: pip install 'pg-inbox[console]'")]
    app, login_path = mount_for_dev(settings, url, receiver)
    base = f"http://{settings.receiver.host}:{settings.receiver.port}"
    return app, [("console", f"{base}{login_path}   (one-time sign-in link, as operator)")]


def _banner(plan: _Plan, url: str, extra: list[tuple[str, str]]) -> str:
    settings = plan.settings
    host, port = settings.receiver.host, settings.receiver.port
    base = f"http://{host}:{port}"
    inbox = inbox_command(plan.banner_config)
    names = [s.name for s in settings.sources]
    first = names[0] if names else "SOURCE"
    lines = [
        "",
        "pg-inbox dev is running",
        f"  config     {plan.config}",
        f"  receiver   {base}/webhooks/{{source}}   (health: /healthz, /metrics)",
        *(f"  {label:<10} {text}" for label, text in extra),
        f"  database   {url}",
        f"  handlers   {plan.router}   (from {plan.router_origin})",
        f"  sources    {', '.join(names) or '(none configured: add [[sources]] to the config)'}",
    ]
    if plan.dev_secrets:
        kept = settings.database.data_dir / "dev-secrets.json"
        lines.append(f"  dev secrets for {', '.join(plan.dev_secrets)} (kept in {kept})")
    lines += [
        f"send a signed test webhook from another terminal, in {Path.cwd()}:",
        f"  {inbox} send {first}",
        "then see what happened to it (other commands find this server by themselves):",
        f"  {inbox} events list",
        f"  (one event in full: {inbox} events show ID"
        + ("; or the console above)" if any(label == "console" for label, _ in extra) else ")"),
        "the worker logs a batch_processed line below for each batch of events it handled",
        f"Ctrl-C stops everything; the data stays in {settings.database.data_dir}",
        "",
    ]
    return "\n".join(lines)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops `inbox dev` the way Ctrl-C does, cleanly


class _WorkerWatch:
    """Stops the receiver when the worker exits on its own: a dev server without its
    worker would accept events that nobody processes."""

    def __init__(self, worker: subprocess.Popen[bytes]) -> None:
        self.worker = worker
        self.stopping = False
        self.died: int | None = None
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        code = self.worker.wait()
        if not self.stopping:
            self.died = code
            os.kill(os.getpid(), signal.SIGTERM)

    def stop(self) -> None:
        self.stopping = True
        self.worker.terminate()
        try:
            self.worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.wait()


def _dev(args: argparse.Namespace, settings: Settings) -> int:
    from inbox._cli.receiver import run_receiver

    # alembic is heavy: loaded by the commands that use it
    from inbox._core import migrate as _migrate

    require_extra("uvicorn", "server", "inbox dev")
    signal.signal(signal.SIGTERM, _interrupt)
    plan = _plan(args, settings)
    _check_handlers(plan)
    with database_url(plan.settings, say=say, embedded=True) as url:
        _migrate.upgrade(url)
        apply_sql(url, plan.schema)
        app, extra = _dev_app(plan.settings, url)
        watch = _WorkerWatch(_start_worker(plan, args, url))
        try:
            print(_banner(plan, url, extra), flush=True)
            # uvicorn re-raises Ctrl-C (and our SIGTERM) after its graceful shutdown.
            with contextlib.suppress(KeyboardInterrupt):
                run_receiver(app, plan.settings.receiver.host, plan.settings.receiver.port)
        finally:
            watch.stop()
    if watch.died is not None:
        print(f"inbox dev: the worker exited with code {watch.died}; stopped", file=sys.stderr)
        return 1
    return 0


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
    dev.add_argument("--concurrency", type=int, default=2, help="claim loops of the worker")
    dev.set_defaults(handler=_dev)
