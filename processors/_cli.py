"""``inbox worker`` (the processor daemon), ``inbox replay`` and ``inbox dead``: registered
into ``inbox`` via an entry point. The replay commands are thin layers over
``processors.replay`` / ``processors.retry_dead``."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from typing import Any

import anyio
import structlog

from inbox._errors import ConfigError
from inbox._runtime import database_url
from inbox._settings import Settings
from processors._cli_replay import register as register_replay
from processors._router import Router
from processors._worker import Worker

__all__ = ["load_router", "register"]

log = structlog.get_logger("processors.cli")


def load_router(spec: str) -> Router:
    """Import ``module:attribute`` and check that it is a Router."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"--app must look like module:router, got {spec!r}")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: the current directory's modules import
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--app {spec}: cannot import {module_name!r}: {exc}") from exc
    router = getattr(module, attribute, None)
    if not isinstance(router, Router):
        raise ConfigError(
            f"--app {spec}: {attribute!r} in {module_name} is"
            f" {type(router).__name__}, not a processors.Router"
        )
    return router


async def _serve(worker: Worker, metrics_port: int | None) -> None:
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr="127.0.0.1", registry=worker.metrics.registry)
    async with anyio.create_task_group() as tg:

        async def on_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    log.info("signal_received", signal=signal.Signals(signum).name)
                    worker.request_stop()

        tg.start_soon(on_signals)
        await worker.run()
        tg.cancel_scope.cancel()


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    router = load_router(args.app)
    with database_url(settings) as url:
        worker = Worker(url, router, settings.worker, concurrency=args.concurrency)
        anyio.run(_serve, worker, args.metrics_port)
    return 0


def register(commands: Any) -> None:
    worker = commands.add_parser("worker", help="process events with the handlers of --app")
    worker.add_argument("--app", required=True, help="the Router to serve, as module:attribute")
    worker.add_argument(
        "--concurrency", type=int, default=1, help="claim loops in this process (default 1)"
    )
    worker.add_argument(
        "--metrics-port", type=int, default=None, help="serve Prometheus metrics on 127.0.0.1"
    )
    worker.set_defaults(handler=_worker)
    register_replay(commands)
