"""``inbox serve`` (the HTTP receiver on uvicorn) and ``inbox send`` (a signed test webhook)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import structlog
import uvicorn

from inbox._asgi import create_app
from inbox._errors import ConfigError
from inbox._runtime import database_url
from inbox._samples import build_sample
from inbox._settings import Settings

__all__ = ["register", "run_receiver"]

log = structlog.get_logger("inbox.receiver")


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    host = args.host or settings.receiver.host
    port = settings.receiver.port if args.port is None else args.port
    with database_url(settings) as url:
        app = create_app(settings, dsn=url)  # validates every source before listening
        if settings.console.enabled:
            from inbox._cli_console import with_console  # the console extra, only if enabled

            app = with_console(app, settings, url)
        log.info(
            "receiver_starting",
            host=host,
            port=port,
            sources=[s.name for s in settings.sources],
        )
        run_receiver(app, host, port)
    return 0


def run_receiver(app: Any, host: str, port: int) -> None:
    """Serve ``app`` on uvicorn until it is told to stop (SIGINT/SIGTERM)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        access_log=False,
        log_config=None,  # the CLI configured logging already; uvicorn must not redo it
        server_header=False,
    )
    uvicorn.Server(config).run()


def _default_url(settings: Settings, source: str) -> str:
    host = settings.receiver.host
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - a wildcard bind is reached via loopback
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.receiver.port}/webhooks/{source}"


def _send(args: argparse.Namespace, settings: Settings) -> int:
    source = settings.source(args.source)
    if source is None:
        known = ", ".join(s.name for s in settings.sources) or "none configured"
        raise ConfigError(f"unknown source {args.source!r} (sources: {known})")
    body = Path(args.file).read_bytes() if args.file else None
    sample = build_sample(
        source,
        url=args.url or _default_url(settings, source.name),
        now=time.time(),
        body=body,
        event_type=args.type,
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


def register(commands: Any) -> None:
    serve = commands.add_parser("serve", help="run the HTTP receiver (POST /webhooks/{source})")
    serve.add_argument("--host", help="interface to listen on (default: [receiver] host)")
    serve.add_argument("--port", type=int, help="port to listen on (default: [receiver] port)")
    serve.set_defaults(handler=_serve)

    send = commands.add_parser(
        "send", help="sign a test webhook with a source's scheme and post it"
    )
    send.add_argument("source", help="the [[sources]] name")
    send.add_argument("--file", help="send this file's bytes as the body (default: a sample)")
    send.add_argument("--type", help="the event type to put in the sample")
    send.add_argument(
        "--url", help="where to post (default: http://[receiver] host:port/webhooks/SOURCE)"
    )
    send.add_argument("--timeout", type=float, default=10.0, help="seconds (default: 10)")
    send.set_defaults(handler=_send)
