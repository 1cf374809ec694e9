"""A TCP proxy in front of PostgreSQL that can cut a connection at a chosen message.

Used to lose a connection during COMMIT: the client's COMMIT reaches the server (or not),
and the reply never reaches the client, which then cannot know the outcome. COMMIT is seen
as a simple query ("Q") or, from a pipeline, as the Parse ("P") of the extended protocol.
"""

from __future__ import annotations

import select
import socket
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo


@dataclass
class CommitCutter:
    """Cut the first connection that sends COMMIT after a statement naming ``after``."""

    after: bytes
    forward_commit: bool
    # For a statement that commits by itself (autocommit): cut at the message naming
    # ``after``, forwarding it or not as ``forward_commit`` says.
    cut_at_after: bool = False
    cut: threading.Event = field(default_factory=threading.Event)


def close_both(*socks: socket.socket) -> None:
    """Shut both ends down (which wakes a thread blocked reading one) and close them: a pump
    that ends leaves no socket for the collector to find open, whichever order the two
    directions end in, and whether or not the proxy's ``close`` still knows the pair."""
    for sock in socks:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with suppress(OSError):
            sock.close()


def _upstream(conninfo: str) -> socket.socket:
    params = conninfo_to_dict(conninfo)
    host = str(params.get("host") or "/var/run/postgresql")
    port = int(params.get("port") or 5432)
    if host.startswith("/"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(f"{host}/.s.PGSQL.{port}")
    else:
        sock = socket.create_connection((host, port))
    return sock


class PostgresProxy:
    """Listens on a loopback TCP port, or with ``unix_dir`` on a Unix socket in that folder
    (where libpq looks for port 5432's)."""

    def __init__(
        self, conninfo: str, cutter: CommitCutter, *, unix_dir: Path | None = None
    ) -> None:
        self._target = conninfo
        self._cutter = cutter
        self._unix_dir = unix_dir
        if unix_dir is None:
            self._listener = socket.create_server(("127.0.0.1", 0))
            self.port = self._listener.getsockname()[1]
        else:
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.bind(str(unix_dir / ".s.PGSQL.5432"))
            self._listener.listen()
            self.port = 5432
        self._stopping = False
        self._sockets: list[socket.socket] = []
        # Between _accept adding a pair and close() (or an outage) taking them all.
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def conninfo(self) -> str:
        """The target's connection string, through the proxy (in clear text, so it can read)."""
        host = "127.0.0.1" if self._unix_dir is None else str(self._unix_dir)
        return make_conninfo(self._target, host=host, port=str(self.port), sslmode="disable")

    def _refuses(self) -> bool:
        """Whether a new connection is closed at once instead of forwarded."""
        return False

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._refuses():
                client.close()
                continue
            server = _upstream(self._target)
            with self._lock:
                if self._stopping:
                    close_both(client, server)
                    return
                self._sockets += [client, server]
            state = {"armed": False, "cut": False}
            for args in ((client, server, state, True), (server, client, state, False)):
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    def _pump(
        self, source: socket.socket, sink: socket.socket, state: dict[str, bool], upstream: bool
    ) -> None:
        cutter = self._cutter
        with suppress(OSError):
            while data := source.recv(65536):
                if upstream and not cutter.cut.is_set():
                    commits = cutter.cut_at_after and cutter.after in data
                    if cutter.after in data and not commits:
                        state["armed"] = True
                    elif commits or (
                        state["armed"] and data[:1] in (b"Q", b"P") and b"COMMIT" in data
                    ):
                        # Before the COMMIT goes on: from now on the other direction drops
                        # what the server sends, so no reply to it can reach the client,
                        # however the two threads are scheduled.
                        state["cut"] = True
                        if cutter.forward_commit:
                            sink.sendall(data)
                        cutter.cut.set()
                        # Let the server act on it, then drop both ends before any reply
                        # can travel back: the client is left not knowing the outcome.
                        # (The other direction closes the server's end once it answers.)
                        with suppress(OSError):
                            sink.shutdown(socket.SHUT_WR)
                        source.close()
                        return
                if not upstream and state["cut"]:
                    break
                sink.sendall(data)
        close_both(source, sink)

    def take_sockets(self) -> list[socket.socket]:
        """Every socket of the connections forwarded so far, forgotten here."""
        with self._lock:
            socks, self._sockets = self._sockets, []
        return socks

    def close(self) -> None:
        with self._lock:
            self._stopping = True
        self._listener.close()
        close_both(*self.take_sockets())


class _ClientSideProxy(PostgresProxy):
    """Cuts nothing; what its clients send goes the way ``_forward_clients`` says (the
    server's replies are relayed as PostgresProxy relays them)."""

    def __init__(self, conninfo: str, *, unix_dir: Path | None = None) -> None:
        never = CommitCutter(after=b"\x00never\x00", forward_commit=True)
        super().__init__(conninfo, never, unix_dir=unix_dir)

    def _pump(
        self, source: socket.socket, sink: socket.socket, state: dict[str, bool], upstream: bool
    ) -> None:
        if upstream:
            self._forward_clients(source, sink)
        else:
            super()._pump(source, sink, state, upstream)

    def _forward_clients(self, source: socket.socket, sink: socket.socket) -> None:
        raise NotImplementedError


class HoldingProxy(_ClientSideProxy):
    """Forwards everything until ``hold()``; from then on what clients send is kept back
    (their statements wait for an answer that never comes) and ``held`` is set.
    ``all_closed`` is set once every client that connected has closed its end (a cancel
    request's own connection included)."""

    def __init__(self, conninfo: str) -> None:
        self.holding = threading.Event()
        self.held = threading.Event()
        self.all_closed = threading.Event()
        self._clients = 0
        self._count_lock = threading.Lock()
        super().__init__(conninfo)

    def hold(self) -> None:
        self.holding.set()

    def _forward_clients(self, source: socket.socket, sink: socket.socket) -> None:
        with self._count_lock:
            self._clients += 1
            self.all_closed.clear()
        with suppress(OSError):
            while data := source.recv(65536):
                if self.holding.is_set():
                    self.held.set()
                    continue
                sink.sendall(data)
        close_both(source, sink)
        with self._count_lock:
            self._clients -= 1
            if self._clients == 0:
                self.all_closed.set()


class PausingProxy(_ClientSideProxy):
    """Forwards everything, but from ``pause()`` until ``resume()`` reads nothing from its
    clients: what a client sends stays in the kernel's buffers until they are full, as with a
    server that stopped reading. Once ``pause()`` returns, no read is under way (a read
    already waiting would otherwise take the next write)."""

    def __init__(self, conninfo: str, *, unix_dir: Path | None = None) -> None:
        self._gate = threading.Lock()  # held by pause(), and by a pump around each read
        self._paused = False
        super().__init__(conninfo, unix_dir=unix_dir)

    def pause(self) -> None:
        if not self._paused:
            self._gate.acquire()
            self._paused = True

    def resume(self) -> None:
        if self._paused:
            self._paused = False
            self._gate.release()

    def _forward_clients(self, source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError, ValueError):  # ValueError: select on a closed socket
            while True:
                with self._gate:
                    # A bounded wait, so that pause() gets the gate between reads.
                    readable, _, _ = select.select([source], [], [], 0.05)
                    if not readable:
                        continue
                    data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        close_both(source, sink)

    def close(self) -> None:
        self.resume()  # the pumps' threads end with their sockets
        super().close()
