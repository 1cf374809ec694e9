"""``inbox console`` (the operator console on its own), ``inbox console hash-password``, and
``inbox console link`` (a new one-time sign-in link for the console of a running ``inbox dev``).

The console's own package needs the ``console`` extra (Jinja2, itsdangerous); this module
imports it only when a command runs, so ``inbox`` works without it.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

from inbox._cli.logs import say
from inbox._core.config.settings import Settings
from inbox._core.errors import ConfigError

__all__ = ["register"]


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if first != getpass.getpass("again: "):
            raise ConfigError("the two passwords differ; nothing was printed")
        return first
    return sys.stdin.readline().rstrip("\r\n")


def _hash_password(args: argparse.Namespace, settings: Settings) -> int:
    from inbox.console._passwords import hash_password

    password = _read_password()
    if not password:
        raise ConfigError("no password on stdin (an empty password is refused)")
    print(hash_password(password))
    return 0


def _dev_receiver(state_file: Path, settings: Settings) -> str:
    """The base URL of the running ``inbox dev``: as it announced it, else as configured."""
    try:
        announced = json.loads(state_file.read_text(encoding="utf-8")).get("receiver")
    except (OSError, ValueError, AttributeError):  # not a JSON object: as configured
        announced = None
    if isinstance(announced, str) and announced:
        return announced.rstrip("/")
    return f"http://{settings.receiver.host}:{settings.receiver.port}"


def _link(args: argparse.Namespace, settings: Settings) -> int:
    from inbox._core.runtime.embedded import running_dev_server

    data_dir = settings.database.data_dir
    running = running_dev_server(data_dir)
    if running is None:
        raise ConfigError(
            f"no `inbox dev` is running on {data_dir}/: a sign-in link is for the console of a"
            " running `inbox dev`; run this in its folder (with its --config, if it has one)"
        )
    _console_module()  # says which extra is missing, if one is
    from inbox.console._links import mint_link

    token = mint_link(data_dir)
    base = _dev_receiver(running.state_file, settings)
    print(f"{base}{settings.console.base_path}/login/token/{token}")
    return 0


def _console_module() -> Any:
    try:
        import inbox.console
    except ImportError as exc:
        raise ConfigError(
            f"the console needs the console extra ({exc.name} is missing):"
            " pip install 'pg-inbox[console]'"
        ) from exc
    return inbox.console


def with_console(receiver: Any, settings: Settings, url: str) -> Any:
    """``inbox serve`` with ``[console] enabled``: the console at ``base_path``."""
    _console_module()  # says which extra is missing, if one is
    from inbox.console._dev import with_console as mounted

    return mounted(receiver, settings, url)


def console_app(settings: Settings, url: str) -> Any:
    """The console on its own: mounted at ``[console] base_path``, ``/`` leading there."""
    console = _console_module().create_app(settings, dsn=url)
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route

    base = settings.console.base_path

    async def home(request: Any) -> Any:
        return RedirectResponse(base + "/", 303)

    return Starlette(
        routes=[Route("/", home), Mount(base, app=console)],
        lifespan=console.router.lifespan_context,
    )


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from inbox._core.database.privileges import require_privileges
    from inbox._core.runtime.resolve import database_url

    host = args.host or settings.console.host
    port = settings.console.port if args.port is None else args.port
    with database_url(settings, say=say, part="operator") as url:
        require_privileges(url, "operator", "inbox console")
        app = console_app(settings, url)
        print(
            f"pg-inbox console on http://{host}:{port}{settings.console.base_path}/",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.Server(
            uvicorn.Config(
                app,
                host=host,
                port=port,
                lifespan="on",
                access_log=False,
                log_config=None,  # the CLI configured logging already
                server_header=False,
                # The trusted header is honoured by the connecting peer's address: that
                # address must not be rewritten from X-Forwarded-For.
                proxy_headers=False,
            )
        ).run()
    return 0


def register(commands: Any) -> None:
    console = commands.add_parser(
        "console",
        help="run the operator console (web pages); hash-password makes a user's hash;"
        " link signs in to a running inbox dev",
        description="Without ACTION: serve the operator console.",
        # ACTION is optional (none serves the console); argparse would print it as required.
        usage="%(prog)s [-h] [--host HOST] [--port PORT] [ACTION ...]",
    )
    console.add_argument("--host", help="interface to listen on (default: [console] host)")
    console.add_argument("--port", type=int, help="port to listen on (default: [console] port)")
    console.set_defaults(handler=_serve)
    actions = console.add_subparsers(dest="console_command", metavar="ACTION")
    hashing = actions.add_parser(
        "hash-password",
        help="read a password on stdin, print its hash for [[console.users]] password_hash",
    )
    hashing.set_defaults(handler=_hash_password)
    link = actions.add_parser(
        "link",
        help="print a new one-time sign-in link for the console of the inbox dev running"
        " in this folder (valid once, for 15 minutes)",
    )
    link.set_defaults(handler=_link)
