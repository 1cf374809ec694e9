"""``inbox worker`` (the processor daemon): registered into ``inbox`` via an entry point.
(``inbox replay`` and ``inbox dead`` are the operations room's, in ``inbox._cli.replay``;
this side gives ``inbox replay --rehearse`` the handlers it runs.)"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
import time
from typing import Any

import anyio

from inbox._core.config.settings import Settings
from inbox._core.database.db import translate_driver_errors
from inbox._core.database.privileges import require_privileges
from inbox._core.errors import ConfigError, DatabaseUnavailableError, MigrationError
from inbox._core.logs import get_logger
from inbox._core.runtime.arguments import port, positive_int
from inbox._core.runtime.daemon import daemon_gc, run_daemon_loop
from inbox._core.runtime.resolve import database_url
from inbox._core.runtime.systemd import Notifier, notify
from processors._model.router import Router
from processors._rehearsal.report import Rehearsal
from processors._rehearsal.run import rehearse
from processors._worker.health import WorkerHealth
from processors._worker.metrics import WorkerMetrics
from processors._worker.probes import ProbeServer
from processors._worker.version import code_version
from processors._worker.worker import Worker

__all__ = ["load_router", "register"]

log = get_logger("processors.cli")


def say(line: str) -> None:
    """A line for the person at the terminal (not a log event), as ``inbox``'s commands say
    theirs: on stderr."""
    print(line, file=sys.stderr)


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
    if not hasattr(module, attribute):
        routers = sorted(name for name, value in vars(module).items() if isinstance(value, Router))
        hint = f"; its Routers: {', '.join(routers)}" if routers else "; it defines no Router"
        raise ConfigError(
            f"--app {spec}: module {module_name} ({module.__file__ or 'built in'}) has no"
            f" attribute {attribute!r}{hint}"
        )
    router = getattr(module, attribute)
    if not isinstance(router, Router):
        raise ConfigError(
            f"--app {spec}: {attribute!r} in {module_name} is"
            f" {type(router).__name__}, not a processors.Router"
        )
    return router


class _EarlySignals:
    """Remembers a SIGTERM/SIGINT that arrives before the event loop listens for them, so a
    worker stopped while it starts still stops gracefully (exit 0) instead of dying."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.arrived = threading.Event()

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._note)

    def _note(self, signum: int, frame: object) -> None:
        self.received = signum
        self.arrived.set()
        notify("STOPPING=1")


async def _serve(worker: Worker, early: _EarlySignals) -> None:
    async with anyio.create_task_group() as tg:

        async def on_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                if early.received is not None:
                    log.info("signal_received", signal=signal.Signals(early.received).name)
                    worker.request_stop()
                async for signum in signals:
                    log.info("signal_received", signal=signal.Signals(signum).name)
                    notify("STOPPING=1")
                    worker.request_stop()

        tg.start_soon(on_signals)
        await worker.run()
        tg.cancel_scope.cancel()


def _check_schema(url: str, early: _EarlySignals) -> bool:
    """Refuse to start on a database whose schema is not the one this code expects.

    A database that does not answer yet is waited for (with backoff), as the running worker
    waits for one that restarts; False when a stop signal came meanwhile.
    """
    from inbox._core.database import migrate as _migrate

    head = _migrate.head_revision()
    delay = 0.1
    while True:
        try:
            with translate_driver_errors("checking the schema revision"):
                current = _migrate.current_revision(url)
            break
        except DatabaseUnavailableError as exc:
            log.warning("database_unavailable", error=str(exc), retry_in_seconds=delay)
            if early.arrived.wait(delay):
                return False
            delay = min(delay * 2, 5.0)
    if current != head:
        raise MigrationError(
            f"the database is at schema revision {current or 'base (empty)'}, this worker"
            f" needs {head}: run `inbox db upgrade` first"
        )
    return True


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    early = _EarlySignals()
    early.install()
    spec = args.app or settings.app.router
    if not spec:
        raise ConfigError(
            "which handlers? pass --app module:router, or set [app] router in the config file"
        )
    router = load_router(spec)
    if args.check:
        return 0  # the handlers import: what `inbox dev` asks before it starts anything
    # The probes and systemd hear from the worker before it waits for its database: alive
    # meanwhile, not ready. A probe that went unanswered while the database is down would
    # have an orchestrator restart the worker for nothing.
    metrics = WorkerMetrics()
    health = WorkerHealth(settings.worker, concurrency=args.concurrency)
    probes = (
        None
        if args.metrics_port is None
        else ProbeServer(args.metrics_host, args.metrics_port, metrics.registry, health)
    )
    notifier = Notifier(
        ready=lambda: health.readiness(time.monotonic()).ok,
        alive=lambda: health.liveness(time.monotonic()).ok,
    )
    notifier.start()
    try:
        with database_url(settings, say=say, part="worker") as url:
            if not _check_schema(url, early):
                return 0  # stopped before it started: nothing was claimed
            require_privileges(url, "worker", "inbox worker")
            version = code_version(router, settings.app.version).version
            worker = Worker(
                url,
                router,
                settings.worker,
                concurrency=args.concurrency,
                version=version,
                pooler=settings.database.pooler,
                prepared_statements=settings.database.prepared_statements,
                listen_dsn=settings.database.listen_url,
                connect_timeout_seconds=settings.database.connect_timeout_seconds,
                metrics=metrics,
                health=health,
            )
            if probes is not None:
                metrics.watch_queue(url, worker=worker.name)
            with daemon_gc():
                run_daemon_loop(_serve, worker, early, loop=settings.worker.event_loop)
    finally:
        notifier.stop()
        if probes is not None:
            probes.close()
    return 0


def _rehearse(url: str, app: str, event_ids: list[int], *, timeout_seconds: float) -> Rehearsal:
    """``inbox replay --rehearse``'s rehearser (inbox._cli.rehearse.Rehearser)."""
    router = load_router(app)
    with translate_driver_errors("rehearsing events"):
        return rehearse(url, router, event_ids, timeout_seconds=timeout_seconds)


def register(commands: Any) -> None:
    worker = commands.add_parser("worker", help="process events with the handlers of --app")
    worker.add_argument(
        "--app", help="the Router to serve, as module:attribute (default: [app] router)"
    )
    worker.add_argument(
        "--concurrency",
        type=positive_int,
        default=1,
        help="claim loops in this process (default 1)",
    )
    worker.add_argument(
        "--metrics-port",
        type=port,
        default=None,
        help="serve Prometheus metrics and the /livez and /readyz probes on this port",
    )
    worker.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="the interface of --metrics-port (default 127.0.0.1; 0.0.0.0 for a kubelet)",
    )
    worker.add_argument(
        "--check", action="store_true", help="only import the handlers, then exit (0: they load)"
    )
    worker.set_defaults(handler=_worker)
    replay = commands.choices.get("replay")
    if replay is not None:
        replay.set_defaults(rehearser=_rehearse)
