"""PgBouncer in transaction mode, a real process in front of the suite's PostgreSQL.

Debian's ``pgbouncer`` (installed by ``.ci/run``), started by the tests in a folder of its
own, on a free loopback port, with the pooler's default settings except what a transaction
pooler in production sets too: ``pool_mode = transaction`` and a small pool, so that the
clients of one database and user really take turns on a few server connections. Nothing is
relaxed unless a test asks (``settings``): no ``ignore_startup_parameters`` (a startup
``options`` is refused), prepared statements as the pooler keeps them (1.18 does not: one
made by a client is met by another client, or lost), no reset between clients (a session
setting outlives its transaction and is seen by the next client of that server connection).

It forwards to wherever the suite's server is: a TCP host and port, or the embedded
server's Unix socket folder. Every client logs in without a password (``auth_type =
trust``); PgBouncer then logs in to PostgreSQL as that user, with the password of the
server's URL for its user, and none for the others (the test servers trust their local
connections).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests._wait import wait_for

PACKAGE = "pgbouncer"
DEBIAN_BINARY = Path("/usr/sbin/pgbouncer")  # /usr/sbin is not on every user's PATH
# The start of a pooler test's skip reason, which the run's summary looks for (conftest.py).
MISSING_PGBOUNCER = f"no {PACKAGE} on this machine"
# What a part may set for its own transactions; none of it may reach the pool's next client.
SESSION_SETTINGS = (
    "statement_timeout",
    "idle_in_transaction_session_timeout",
    "lock_timeout",
    "client_connection_check_interval",
)
# Server connections per database and user: fewer than any part's own pool.
POOL_SIZE = 3
START_SECONDS = 30.0
# A port picked free may be taken by another process before PgBouncer binds it.
PORT_TRIES = 5


def find_pgbouncer() -> Path | None:
    """The pgbouncer executable, if this machine has one."""
    found = shutil.which(PACKAGE) or (str(DEBIAN_BINARY) if DEBIAN_BINARY.is_file() else None)
    return None if found is None else Path(found)


def pgbouncer_binary() -> Path:
    """The pgbouncer executable; skips the test where there is none (fails it where ``CI``
    is set: CI installs the package and must run these tests)."""
    found = find_pgbouncer()
    if found is None:
        missing = f"{MISSING_PGBOUNCER}: apt-get install {PACKAGE}"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _quoted(text: str) -> str:
    """A value for PgBouncer's auth file: in double quotes, a quote doubled."""
    return '"' + text.replace('"', '""') + '"'


def _run_as(target_host: str) -> str | None:
    """PgBouncer refuses to run as root: as root, it switches to the user that owns the
    server's socket folder when the server is on a Unix socket (the embedded server keeps
    its socket in its private data folder), else ``postgres`` (Debian's package depends on
    it), else ``nobody``."""
    if os.geteuid() != 0:
        return None
    if target_host.startswith("/"):
        owner = Path(target_host).stat().st_uid
        if owner != 0:
            return pwd.getpwuid(owner).pw_name
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name).pw_name
    raise RuntimeError("no user for PgBouncer to run as (it refuses root): no postgres, no nobody")


class PgBouncer:
    """One PgBouncer process in front of ``server`` (a conninfo), for its user and ``users``."""

    def __init__(
        self,
        server: str,
        *,
        users: Iterable[str] = (),
        pool_size: int = POOL_SIZE,
        settings: Mapping[str, str] | None = None,
        binary: Path | None = None,
    ) -> None:
        """``settings``: more of the ``[pgbouncer]`` section (a test of a relaxed pooler);
        ``binary``: the executable (default: the machine's, or the test is skipped)."""
        self._server = server
        self._binary = binary
        self._settings = dict(settings or {})
        params = conninfo_to_dict(server)
        self._user = str(params.get("user") or pwd.getpwuid(os.geteuid()).pw_name)
        self._password = str(params.get("password") or "")
        self._users = [u for u in dict.fromkeys(users) if u != self._user]
        self.pool_size = pool_size
        self.port = 0
        self.folder = Path(tempfile.mkdtemp(prefix="inbox-pgbouncer-"))
        self.log_path = self.folder / "pgbouncer.log"
        self._process: subprocess.Popen[bytes] | None = None

    def _target(self) -> tuple[str, str]:
        """The server's host (or socket folder) and port."""
        params = conninfo_to_dict(self._server)
        host = str(params.get("host") or "/var/run/postgresql")
        port = str(params.get("port") or 5432)
        if "," in host or "," in port:
            raise ValueError("PgBouncer's test server must be one host, not a list")
        return host, port

    def _write_files(self, port: int) -> Path:
        auth = self.folder / "users.txt"
        lines = [f"{_quoted(self._user)} {_quoted(self._password)}"]
        lines += [f"{_quoted(user)} {_quoted('')}" for user in self._users]
        auth.write_text("\n".join(lines) + "\n", encoding="utf-8")
        config = self.folder / "pgbouncer.ini"
        host, server_port = self._target()
        config.write_text(
            "[databases]\n"
            # The fallback entry: any database name, on the server's host.
            f"* = host={host} port={server_port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {port}\n"
            "unix_socket_dir =\n"  # TCP only: no socket file in a shared folder
            "auth_type = trust\n"
            f"auth_file = {auth}\n"
            f"admin_users = {self._user}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {self.pool_size}\n"
            + "".join(f"{name} = {value}\n" for name, value in self._settings.items()),
            encoding="utf-8",
        )
        return config

    def start(self) -> None:
        binary = self._binary or pgbouncer_binary()
        user = _run_as(self._target()[0])
        if user is not None:
            os.chown(self.folder, pwd.getpwnam(user).pw_uid, -1)
        for _ in range(PORT_TRIES):
            port = _free_port()
            config = self._write_files(port)
            argv = [str(binary), *(["-u", user] if user else []), str(config)]
            logged = len(self.output())
            with self.log_path.open("ab") as log:
                self._process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            self.port = port
            if self._wait_until_ready(logged):
                return
        raise RuntimeError(f"PgBouncer never listened in {PORT_TRIES} tries:\n{self.output()}")

    def _wait_until_ready(self, logged: int) -> bool:
        """True once a client gets a query answered through it; False when it exited because
        its port was taken meanwhile (start tries another; ``logged``: the log's length
        before this try)."""
        process = self._process
        assert process is not None

        def answers() -> bool:
            if process.poll() is not None:
                return True  # said below
            try:
                with psycopg.connect(self.pooled(self._server), connect_timeout=2) as conn:
                    conn.execute("select 1")
            except psycopg.OperationalError:
                return False
            return True

        try:
            wait_for(answers, timeout=START_SECONDS, what=f"PgBouncer on port {self.port}")
        except AssertionError as exc:
            raise RuntimeError(f"{exc}; its log:\n{self.output()[logged:]}") from None
        if process.poll() is None:
            return True
        if "Address already in use" in self.output()[logged:]:
            return False
        raise RuntimeError(f"PgBouncer exited with {process.returncode}:\n{self.output()}")

    def pooled(self, url: str) -> str:
        """``url`` (a database on the server) through this PgBouncer: same user and
        database, its host and port instead; no TLS (PgBouncer offers none here)."""
        return make_conninfo(url, host="127.0.0.1", port=str(self.port), sslmode="disable")

    def admin(self, command: str) -> list[dict[str, Any]]:
        """The rows of an admin console command (``SHOW POOLS``, ``SHOW SERVERS``)."""
        console = make_conninfo(self.pooled(self._server), dbname="pgbouncer")
        with psycopg.connect(console, autocommit=True) as conn:
            # The console speaks the simple query protocol only: a statement without
            # parameters is sent that way.
            cursor = conn.execute(command)  # type: ignore[call-overload]
            names = [d.name for d in cursor.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def connections_of(self, url: str) -> tuple[int, int]:
        """(clients, server connections) of the pool of ``url``'s database and user."""
        params = conninfo_to_dict(url)
        for pool in self.admin("SHOW POOLS"):
            if (pool["database"], pool["user"]) == (params.get("dbname"), params.get("user")):
                clients = pool["cl_active"] + pool["cl_waiting"]
                states = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")
                return clients, sum(pool[state] for state in states)
        return 0, 0

    def settings_left(self, url: str, defaults: Mapping[str, str]) -> list[dict[str, str]]:
        """The server connections of ``url``'s pool (its database and user) on which a new
        client would not find the settings ``defaults`` names at those values: what an
        earlier client left behind, with each one's backend ``pid``.

        As many clients as the pool has server connections each open a transaction and hold
        it: each then has a server connection of its own, so together they see all of them
        (a missing one is opened fresh). Call it when the pool's other clients are idle.
        """
        seen = []
        with contextlib.ExitStack() as stack:
            for _ in range(self.pool_size):
                conn = stack.enter_context(
                    psycopg.connect(self.pooled(url), prepare_threshold=None)
                )
                seen.append(current_settings(conn, [*defaults, "pid"]))
        assert len({v["pid"] for v in seen}) == self.pool_size, seen
        return [v for v in seen if {k: v[k] for k in defaults} != dict(defaults)]

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)  # PgBouncer's immediate shutdown
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def current_settings(conn: psycopg.Connection[Any], names: Sequence[str]) -> dict[str, str]:
    """The values of the settings ``names`` on ``conn``'s session (``pid``: its backend's)."""
    row = conn.execute(
        "select array_agg(case when name = 'pid' then pg_backend_pid()::text"
        " else current_setting(name) end order by n)"
        " from unnest(%s::text[]) with ordinality as t(name, n)",
        [list(names)],
    ).fetchone()
    assert row is not None
    return dict(zip(names, row[0], strict=True))


@contextlib.contextmanager
def running_pgbouncer(
    server: str,
    *,
    users: Iterable[str] = (),
    pool_size: int = POOL_SIZE,
    settings: Mapping[str, str] | None = None,
    binary: Path | None = None,
) -> Iterator[PgBouncer]:
    """A started PgBouncer in front of ``server``, stopped and removed on exit."""
    bouncer = PgBouncer(server, users=users, pool_size=pool_size, settings=settings, binary=binary)
    try:
        bouncer.start()
        yield bouncer
    finally:
        bouncer.stop()
