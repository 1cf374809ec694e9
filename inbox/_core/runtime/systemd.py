"""Telling systemd how a daemon of ours is doing (``sd_notify``), without libsystemd.

Under a ``Type=notify`` unit systemd passes ``NOTIFY_SOCKET``, a Unix datagram socket, and
with ``WatchdogSec=`` also ``WATCHDOG_USEC``. A message is a datagram of ``KEY=value`` lines:
``READY=1`` once the service is ready, ``STOPPING=1`` when it begins to stop, ``WATCHDOG=1``
to say it is alive (systemd kills a service that stays silent for ``WatchdogSec``). Without
``NOTIFY_SOCKET`` every call here does nothing, so the daemons call them unconditionally.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable

from inbox._core.logs import get_logger

__all__ = ["Notifier", "notify", "watchdog_interval"]

log = get_logger("inbox.systemd")

# How often the notifier looks whether the service became ready (until it has).
READY_CHECK_SECONDS = 0.1


def notify(*lines: str) -> bool:
    """Send ``lines`` (``"READY=1"``, ...) to systemd; False when not run under it or the
    socket refused them (the service runs on either way)."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # an abstract socket, as systemd names it
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            # Never waits: a socket whose reader lags (its queue is full) must not hold up
            # the event loop that says it stops; the message is dropped and logged.
            sock.setblocking(False)
            sock.sendto("\n".join(lines).encode(), address)
    except OSError as exc:
        log.warning("systemd_notify_failed", message=" ".join(lines), error=str(exc))
        return False
    return True


def watchdog_interval() -> float | None:
    """How often to send ``WATCHDOG=1`` (half of ``WATCHDOG_USEC``, as sd_watchdog_enabled
    advises), or None when systemd watches no process, or another one (``WATCHDOG_PID``)."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2_000_000


class Notifier:
    """A thread that sends ``READY=1`` once ``ready()`` first holds, then ``WATCHDOG=1``
    every half watchdog interval while ``alive()`` holds.

    A thread, not a task: it keeps the watchdog fed while the process waits for its database
    before its event loop runs, and it stops feeding it when that loop is stuck (``alive``
    says so), which a task on the stuck loop could not tell.
    """

    def __init__(self, *, ready: Callable[[], bool], alive: Callable[[], bool]) -> None:
        self._ready = ready
        self._alive = alive
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start sending; nothing happens when not run under systemd."""
        if not os.environ.get("NOTIFY_SOCKET"):
            return
        self._thread = threading.Thread(target=self._run, name="pg-inbox systemd", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        interval = watchdog_interval()
        ready_sent = False
        next_ping = time.monotonic()
        while True:
            now = time.monotonic()
            if not ready_sent and self._ready():
                notify("READY=1")
                ready_sent = True
            if interval is not None and now >= next_ping:
                if self._alive():
                    notify("WATCHDOG=1")
                next_ping = now + interval
            wait = READY_CHECK_SECONDS if not ready_sent else None
            if interval is not None:
                wait = min(wait or interval, max(0.0, next_ping - time.monotonic()))
            if self._stop.wait(wait):
                return
