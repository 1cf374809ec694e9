"""The guardian of an ``inbox dev``: a small process that stops what ``inbox dev`` started
when ``inbox dev`` itself ends without doing so (SIGKILL, an out-of-memory kill, a crash).

The embedded PostgreSQL runs in a session of its own (``pg_ctl`` starts it so), and the
worker is started in one too, so nothing the terminal sends reaches them: ``inbox dev`` is
the one that stops them. If it cannot, the guardian does. It is started in a session of
its own, so a signal to the terminal's process group does not take it down with the rest.

``inbox dev`` tells it, one line each, on a pipe only the two of them hold: ``worker PID``
(each worker it starts), ``server PGDATA`` (the embedded server's data folder), ``state
FILE`` (the dev state file to remove) and, once it has stopped everything itself, ``done``.
The end of the pipe without ``done`` means ``inbox dev`` is gone: the guardian stops the
worker (SIGTERM, then SIGKILL after a grace period) and the server, removes the state file,
and exits. It also holds the data directory's lock (inherited), so a new ``inbox dev`` on
the same folder waits until the clean-up is over instead of adopting what was left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

from inbox._core.runtime.embedded import DataDirLock, stop_server

__all__ = ["Guardian", "main"]

# How long the worker gets to finish its batch before SIGKILL (a batch that is killed rolls
# back whole: nothing is lost, it only runs again).
WORKER_GRACE_SECONDS = 10.0


class Guardian:
    """``inbox dev``'s side: start the guardian, tell it what to stop, say when it is done."""

    def __init__(self, lock: DataDirLock) -> None:
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "inbox._cli.dev.guard", str(read_end)],
                pass_fds=(read_end, lock.fileno()),
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        finally:
            os.close(read_end)
        # Only this process holds the write end (pipes are not inherited by the processes it
        # starts), so its end, however it comes, is the end of the pipe.
        self._pipe = os.fdopen(write_end, "wb", buffering=0)

    def _tell(self, line: str) -> None:
        with contextlib.suppress(OSError):
            self._pipe.write(line.encode() + b"\n")

    def guard_worker(self, pid: int) -> None:
        self._tell(f"worker {pid}")

    def guard_server(self, pgdata: Path) -> None:
        self._tell(f"server {pgdata}")

    def guard_state(self, state_file: Path) -> None:
        self._tell(f"state {state_file}")

    def done(self) -> None:
        """Everything is stopped: the guardian exits at once, letting go of the lock."""
        self._tell("done")
        self._pipe.close()
        self._process.wait()


def _stop_worker(pid: int) -> None:
    # Started in a session of its own, a worker leads it: a pid that no longer does is not
    # ours any more (it ended, and the number was given to another process).
    try:
        if os.getsid(pid) != pid:
            return
        os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + WORKER_GRACE_SECONDS
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def watch(pipe: BinaryIO) -> None:
    """Read what to guard until the pipe ends; stop it all unless told ``done``."""
    workers: list[int] = []
    servers: list[Path] = []
    states: list[Path] = []
    for raw in pipe:
        what, _, value = raw.decode(errors="replace").strip().partition(" ")
        if what == "done":
            return
        if what == "worker":
            workers.append(int(value))
        elif what == "server":
            servers.append(Path(value))
        elif what == "state":
            states.append(Path(value))
    for pid in workers:
        _stop_worker(pid)
    for pgdata in servers:
        stop_server(pgdata)
    for state in states:
        with contextlib.suppress(OSError):
            state.unlink()


def main(argv: list[str]) -> int:
    # Its session is its own already; these keep a signal sent to a group it might still be
    # reached by from cutting the clean-up short.
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    with os.fdopen(int(argv[0]), "rb") as pipe:
        watch(pipe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
