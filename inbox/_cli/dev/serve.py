"""``inbox dev``'s receiver: its address taken before anything starts, and uvicorn serving on
it in a thread of its own, so that the main thread alone handles signals and decides the
order in which everything stops."""

from __future__ import annotations

import errno
import socket
import threading
from typing import Any

from inbox._cli.receiver import receiver_config
from inbox._core.config.settings import ReceiverSettings
from inbox._core.errors import ConfigError

__all__ = ["ReceiverThread", "base_url", "take_address"]


def take_address(host: str, port: int) -> socket.socket:
    """Bind the receiver's address now: a port that is taken is one clear line before the
    database starts, never a success banner followed by uvicorn's error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"{host}:{port} is already in use (another `inbox dev`?); choose a free port"
                " with --port N (0 picks one)"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(False)
    return sock


def base_url(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket, as a browser on this machine reaches it."""
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):  # noqa: S104 - a wildcard bind is reached via loopback
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


class ReceiverThread:
    """uvicorn serving ``app`` on ``sock`` in a daemon thread until ``stop()``.

    Off the main thread uvicorn installs no signal handlers: ``stop()`` is how it stops
    (gracefully: requests in flight finish, then the app's shutdown runs).
    """

    def __init__(
        self, app: Any, sock: socket.socket, on_end: Any, limits: ReceiverSettings | None = None
    ) -> None:
        import uvicorn

        host, port = sock.getsockname()[:2]
        self._server = uvicorn.Server(receiver_config(app, host, port, limits))
        self._sock = sock
        self._on_end = on_end
        self._thread = threading.Thread(target=self._serve, name="inbox dev receiver")
        self.failed: BaseException | None = None

    def _serve(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread, which stops
            self.failed = exc
        finally:
            self._on_end()

    def start(self) -> None:
        self._thread.start()

    @property
    def started(self) -> bool:
        """Listening, and the app's start-up has run."""
        return bool(self._server.started)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join()
