"""``inbox serve`` (the HTTP receiver on uvicorn) and ``inbox send`` (a signed test webhook)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from inbox._cli.common import http_url, port, positive_int, positive_seconds
from inbox._cli.dev.env import with_dev_secrets
from inbox._cli.logs import say
from inbox._cli.processes import serve_in_processes
from inbox._cli.uvicorn_hooks import http_options
from inbox._core.config.settings import ReceiverSettings, Settings
from inbox._core.database.privileges import require_privileges
from inbox._core.errors import ConfigError
from inbox._core.logs import get_logger
from inbox._core.runtime.daemon import daemon_gc
from inbox._core.runtime.embedded import running_dev_server
from inbox._core.runtime.extras import require_extra
from inbox._core.runtime.resolve import database_url, where_settings_came_from
from inbox._core.runtime.systemd import Notifier, notify
from inbox._receiving.samples import build_sample
from inbox.contrib._asgi import create_app
from inbox.contrib._probes import ReceiverProbes

if TYPE_CHECKING:
    import uvicorn  # the server extra: imported when serving, named here for types

__all__ = ["receiver_config", "register", "run_receiver"]

log = get_logger("inbox.receiver")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    require_extra("uvicorn", "server", "inbox serve")  # before anything starts
    host = args.host or settings.receiver.host
    port = settings.receiver.port if args.port is None else args.port
    with database_url(settings, say=say, part="receiver") as url:
        app = create_app(settings, dsn=url)  # validates every source before listening
        require_privileges(url, "receiver", "inbox serve")
        if settings.console.enabled:
            from inbox._cli.console import with_console  # the console extra, only if enabled

            console_url = settings.database.operator_url or settings.database.url or url
            require_privileges(console_url, "operator", "inbox serve (the console)")
            served: Any = with_console(app, settings, console_url)
        else:
            served = app  # its webhooks take a short way past the middlewares and router
        log.info(
            "receiver_starting",
            host=host,
            port=port,
            sources=[s.name for s in settings.sources],
            workers=args.workers,
        )
        return run_receiver(
            served, host, port, args.workers, settings.receiver, probes=app.state.probes
        )


def run_receiver(
    app: Any,
    host: str,
    port: int,
    workers: int = 1,
    limits: ReceiverSettings | None = None,
    probes: ReceiverProbes | None = None,
) -> int:
    """Serve ``app`` on uvicorn until SIGINT/SIGTERM, in ``workers`` processes; return the
    exit status once it has stopped cleanly.

    Under a systemd ``Type=notify`` unit, one process says ``READY=1`` once ``probes`` (the
    receiver app's) says its pool connected, and feeds the watchdog while its event loop
    beats; several processes are said ready once started (serve_in_processes)."""
    config = receiver_config(app, host, port, limits)
    if workers > 1:
        return serve_in_processes(_serve_on, config, workers)
    notifier = None
    if probes is not None:
        notifier = Notifier(
            ready=lambda: probes.connected, alive=lambda: probes.alive(time.monotonic())
        )
        notifier.start()
    try:
        _serve_on(config)
    finally:
        if notifier is not None:
            notifier.stop()
    return 0


def receiver_config(
    app: Any, host: str, port: int, limits: ReceiverSettings | None = None
) -> uvicorn.Config:
    """How every receiver (``inbox serve``, ``inbox dev``) runs on uvicorn, with the
    ``[receiver]`` limits on what a client may hold (default: their defaults)."""
    server = require_extra("uvicorn", "server", "the HTTP receiver")
    require_extra("httptools", "server", "the HTTP receiver")
    limits = limits or ReceiverSettings()
    config: uvicorn.Config = server.Config(
        app,
        host=host,
        port=port,
        **http_options(limits),  # the head's limits and clocks (inbox._cli.uvicorn_hooks)
        limit_concurrency=limits.max_connections,  # uvicorn's own: 503 past it
        lifespan="on",
        access_log=False,
        log_config=None,  # the CLI configured logging already; uvicorn must not redo it
        server_header=False,
        # The console's trusted header is honoured by the connecting peer's address; uvicorn's
        # X-Forwarded-For rewriting would let any local client claim another address.
        proxy_headers=False,
    )
    # The writer reports an unreachable database itself, once per interval and with the
    # fix; the pool's own warning for every reconnection attempt would bury it.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    return config


def _serve_on(config: uvicorn.Config, sockets: list[socket.socket] | None = None) -> None:
    uvicorn = require_extra("uvicorn", "server", "the HTTP receiver")

    class Server(uvicorn.Server):  # type: ignore[misc,name-defined]  # an optional extra
        def handle_exit(self, sig: int, frame: Any) -> None:
            notify("STOPPING=1")  # systemd shows the stop at once, not after the drain
            super().handle_exit(sig, frame)

    server = Server(config)
    with _stop_signals_handled_by(server), daemon_gc():
        server.run(sockets=sockets)


@contextlib.contextmanager
def _stop_signals_handled_by(server: uvicorn.Server) -> Iterator[None]:
    """While serving, uvicorn handles SIGINT/SIGTERM itself (a graceful stop); afterwards it
    raises the signal again for the handler it found, and the default ones end the process
    by that signal (exit -15) although it stopped cleanly. The handler it finds here is the
    server's own stop: a signal before uvicorn takes over still stops it, and the repeat
    after a clean stop changes nothing, so the command returns and exits 0."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, server.handle_exit) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _default_url(settings: Settings, source: str) -> str:
    """The receiver of an ``inbox dev`` running in this data directory with these same
    settings (it may listen elsewhere than they say: --port), else the configured one."""
    running = running_dev_server(settings.database.data_dir)
    mine = None if settings.config_file is None else str(Path(settings.config_file).resolve())
    if running is not None and running.receiver and running.config == mine:
        return f"{running.receiver}/webhooks/{source}"
    host = settings.receiver.host
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - a wildcard bind is reached via loopback
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.receiver.port}/webhooks/{source}"


def _send(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.sources:
        raise ConfigError(
            f"no sources configured: {where_settings_came_from(settings)}; pass --config FILE"
            " (`inbox init` writes an inbox.toml; a running `inbox dev` prints its own --config)"
        )
    # What `inbox dev` verifies with, for sources whose secret is not in this environment.
    settings, dev_signed = with_dev_secrets(settings, create=False)
    source = settings.source(args.source)
    if source is None:
        known = ", ".join(s.name for s in settings.sources) or "none configured"
        raise ConfigError(f"unknown source {args.source!r} (sources: {known})")
    if source.name in dev_signed:
        print(f"inbox send: signed with the development secret of {source.name}", file=sys.stderr)
    body = args.file.read() if args.file else None
    sample = build_sample(
        source,
        url=args.url or _default_url(settings, source.name),
        now=time.time(),
        body=body,
        event_type=args.type,
        content_type=args.content_type,
    )
    headers = {"user-agent": "pg-inbox send", **sample.headers}
    try:
        response = httpx.post(
            sample.url, content=sample.body, headers=headers, timeout=args.timeout
        )
    except httpx.HTTPError as exc:
        print(f"inbox send: could not reach {sample.url}: {exc}", file=sys.stderr)
        return 1
    print(f"POST {sample.url} -> HTTP {response.status_code} {response.reason_phrase}")
    event_id = response.headers.get("inbox-event-id")
    status = _reply_status(response)
    if event_id:
        print(f"event id: {event_id} ({status or 'accepted'})")
    else:
        print(f"reply: {response.text[:500]}")
    return 0 if response.is_success else 1


def _reply_status(response: httpx.Response) -> str | None:
    try:
        reply: Any = json.loads(response.content)
    except ValueError:
        return None
    status = reply.get("status") if isinstance(reply, dict) else None
    return status if isinstance(status, str) else None


MAX_WORKERS = 64


def _workers(text: str) -> int:
    """An argparse type: a number of receiver processes, 1 to MAX_WORKERS."""
    value = positive_int(text)
    if value > MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"at most {MAX_WORKERS} processes, got {value}")
    return value


def register(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run the HTTP receiver (POST /webhooks/{source})")
    serve.add_argument("--host", help="interface to listen on (default: [receiver] host)")
    serve.add_argument("--port", type=port, help="port to listen on (default: [receiver] port)")
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="receiver processes sharing the port (default: 1); each has its own pool",
    )
    serve.set_defaults(handler=_serve)

    send = commands.add_parser(
        "send", help="sign a test webhook with a source's scheme and post it"
    )
    send.add_argument("source", help="the [[sources]] name")
    send.add_argument(
        "--file",
        type=argparse.FileType("rb"),
        help="send this file's bytes as the body (default: a sample; - reads stdin)",
    )
    send.add_argument(
        "--content-type",
        help="the body's content type (default: JSON if it parses as JSON, else"
        " application/octet-stream; form schemes: their form encoding)",
    )
    send.add_argument("--type", help="the event type to put in the sample")
    send.add_argument(
        "--url",
        type=http_url,
        help="where to post (default: the running `inbox dev`'s receiver, else"
        " http://[receiver] host:port/webhooks/SOURCE)",
    )
    send.add_argument(
        "--timeout", type=positive_seconds, default=10.0, help="seconds (default: 10)"
    )
    send.set_defaults(handler=_send)
