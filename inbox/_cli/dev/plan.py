"""What an ``inbox dev`` run serves, decided and checked before anything starts: the settings
(the demo's in an empty folder), the handlers, the schema files, the receiver's address."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from inbox._cli.dev.env import (
    EXAMPLES_ROUTER,
    examples_schema,
    sql_files,
    with_dev_secrets,
    write_demo_config,
)
from inbox._core.config.settings import DEFAULT_CONFIG_PATH, Settings, load_settings, settings_file
from inbox._core.errors import ConfigError

__all__ = ["Plan", "check_handlers", "inbox_argv", "make_plan"]


@dataclass(frozen=True, slots=True)
class Plan:
    settings: Settings  # with --host/--port applied
    config: Path  # the settings file of this run
    banner_config: Path | None  # what the other commands need as --config (None: found alone)
    router: str
    router_origin: str  # where `router` came from, for messages
    schema: list[Path]
    dev_secrets: list[str]  # sources that got a development secret
    watched: list[Path]  # the handlers' own files and folders, watched for changes


def make_plan(args: argparse.Namespace, settings: Settings) -> Plan:
    config = settings_file(args.config)
    if config is None:
        # An empty folder: the built-in demo, as a config file the other commands can use.
        config = write_demo_config(settings)
        settings = load_settings(config)
    settings, filled = with_dev_secrets(settings, create=True)
    address = {"host": args.host, "port": args.port}
    given = {key: value for key, value in address.items() if value is not None}
    if given:
        receiver = settings.receiver.model_copy(update=given)
        settings = settings.model_copy(update={"receiver": receiver})
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
    watched = _handler_sources(router)
    return Plan(settings, config, shown, router, origin, files, filled, watched)


def _schema_file(path: Path, config: Path) -> Path:
    if not path.exists():
        raise ConfigError(f"[app] tables in {config}: {path} does not exist", path=str(config))
    return path


def _handler_sources(router: str) -> list[Path]:
    """Where the handlers' code lives, to restart the worker when it changes: the top-level
    module's file, or its package's folder; nothing for installed packages, which nobody
    edits while they run. Found without importing the handlers (``inbox`` never imports
    them: the worker does)."""
    top = router.partition(":")[0].split(".")[0]
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # as the worker finds them: the current folder's modules import
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    if spec.submodule_search_locations:
        where = Path(next(iter(spec.submodule_search_locations)))
    else:
        where = Path(spec.origin)
    installed = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    if any(where.resolve().is_relative_to(folder) for folder in installed):
        return []
    return [where.resolve()]


def inbox_argv(plan: Plan, *args: str) -> list[str]:
    """This interpreter running pg-inbox itself (not a PATH lookup), with the plan's config."""
    return [sys.executable, "-m", "inbox", "--config", str(plan.config), *args]


def check_handlers(plan: Plan) -> str | None:
    """Import the handlers in a process of their own (``inbox`` never imports
    ``processors``); None when they load, else why not, in one line."""
    checked = subprocess.run(  # noqa: S603 - our own interpreter and module
        inbox_argv(plan, "worker", "--app", plan.router, "--check"),
        capture_output=True,
        text=True,
        check=False,
    )
    if checked.returncode == 0:
        return None
    lines = (checked.stderr or checked.stdout).strip().splitlines() or ["(no output)"]
    detail = lines[-1].removeprefix("inbox: error: ")
    return f"the handlers {plan.router} (from {plan.router_origin}) do not load: {detail}"
