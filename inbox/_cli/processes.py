"""``inbox serve --workers N``: N receiver processes on one listening socket.

The parent checks everything first (settings, sources, privileges: ``inbox serve`` did that
before calling here), binds the socket, then forks the processes, which each serve the same
app on it with uvicorn; the kernel hands each new connection to one of them. Each process
opens its own database pool on its first request (the app's writer is made on first use),
so N processes hold up to N times ``[database] pool_max_size`` connections; a duplicate sent
to two processes at once is still one event (the unique key decides, not the process).
Each process counts its own ``/metrics`` (a scrape sees the process that answered it).

The parent only supervises: SIGTERM or SIGINT is passed on to every process, each stops
gracefully (uvicorn finishes its requests in flight) and the parent returns once all have;
a process that dies on its own stops the others, and the command fails (exit 1), for the
service manager to restart it whole.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from typing import Any

from inbox._core.logs import get_logger
from inbox._core.runtime.systemd import notify

__all__ = ["serve_in_processes"]

log = get_logger("inbox.receiver")

HANDLED = {signal.SIGINT, signal.SIGTERM, signal.SIGCHLD}
# After SIGTERM, how long the processes get to finish their requests before SIGKILL.
GRACE_SECONDS = 30.0


def serve_in_processes(
    serve_one: Any, config: Any, workers: int, grace_seconds: float = GRACE_SECONDS
) -> int:
    """Fork ``workers`` processes that each run ``serve_one(config, sockets)`` on the socket
    ``config`` binds (a ``uvicorn.Config``); the exit status of the whole."""
    if not hasattr(os, "fork"):
        print("inbox serve: --workers needs a platform with fork()", file=sys.stderr)
        return 2
    sock = config.bind_socket()
    # Blocked before the first fork, so a signal that comes while the processes start is
    # waited for below, not lost; each process unblocks them for uvicorn's own handlers.
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    children: dict[int, int] = {}
    try:
        for number in range(workers):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's coverage is not collected
                _child(serve_one, config, sock)
            children[pid] = number
        log.info("receiver_processes_started", workers=workers, pids=sorted(children))
        # systemd hears from this process only (NotifyAccess=main): ready once they run.
        notify("READY=1")
        return _supervise(children, grace_seconds)
    finally:
        sock.close()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


def _child(serve_one: Any, config: Any, sock: socket.socket) -> None:
    """Serve until stopped, then leave without running the parent's exit handlers."""
    code = 1
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
        os.environ.pop("NOTIFY_SOCKET", None)  # the parent speaks to systemd for all
        serve_one(config, [sock])
        code = 0
    except BaseException as exc:  # noqa: BLE001 - a process's end is reported, then exits
        log.error("receiver_process_failed", error=f"{type(exc).__name__}: {exc}")
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _supervise(children: dict[int, int], grace_seconds: float) -> int:
    failed = False
    while children:
        received = signal.sigwait(HANDLED)
        if received != signal.SIGCHLD:
            log.info("receiver_stopping", signal=signal.Signals(received).name)
            notify("STOPPING=1")
            break
        if any(status != 0 for status in _reap(children)):
            failed = True
            if children:
                log.error("receiver_process_died", left=len(children))
            break
    _stop(children, grace_seconds)
    return 1 if failed else 0


def _reap(children: dict[int, int]) -> list[int]:
    """Collect the processes that have ended; their exit statuses."""
    ended = []
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            del children[pid]
            ended.append(os.waitstatus_to_exitcode(status))
    return ended


def _stop(children: dict[int, int], grace_seconds: float) -> None:
    """SIGTERM to every process left, then wait for them (SIGKILL after the grace)."""
    for pid in children:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while children:
        _reap(children)
        if not children:
            return
        if time.monotonic() > deadline:
            for pid in children:
                os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        # A SIGCHLD (or the next tick) says when to look again.
        signal.sigtimedwait({signal.SIGCHLD}, 0.1)
