"""``inbox dev``'s worker: a process of its own (as workers run in production), started again
when the handlers' files change, and reported when it dies on its own.

It runs in a session of its own, so the terminal's signals (Ctrl-C, a closed window) reach
only ``inbox dev``, which stops it with the same signal once the receiver has stopped. The
guardian is told each worker's pid, in case ``inbox dev`` is killed first.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from inbox._cli.dev.guard import Guardian
from inbox._cli.dev.plan import Plan, check_handlers, inbox_argv
from inbox._cli.logs import say

__all__ = ["DevWorker"]

# How long a stopped worker gets to finish its batch before SIGKILL.
STOP_GRACE_SECONDS = 60.0


class DevWorker:
    """The worker process; ``on_death(code)`` is called (from a thread) when it exits on its
    own, that is, not because ``inbox dev`` stopped or restarted it."""

    def __init__(
        self,
        plan: Plan,
        args: argparse.Namespace,
        url: str,
        guardian: Guardian,
        on_death: Callable[[int], None],
    ) -> None:
        self._plan = plan
        self._args = args
        self._url = url
        self._guardian = guardian
        self._on_death = on_death
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        command = inbox_argv(self._plan, "--dev", "worker", "--app", self._plan.router)
        command += ["--concurrency", str(self._args.concurrency)]
        env = {**os.environ, "INBOX_DATABASE__URL": self._url}
        with self._lock:
            if self._stopping.is_set():
                return  # a restart that lost the race with stop(): nothing may start now
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                command, env=env, start_new_session=True
            )
            self._process = process
        self._guardian.guard_worker(process.pid)
        threading.Thread(target=self._watch, args=(process,), daemon=True).start()

    def _watch(self, process: subprocess.Popen[bytes]) -> None:
        code = process.wait()
        with self._lock:
            deliberate = self._stopping.is_set() or process is not self._process
        if not deliberate:
            self._on_death(code)

    def _stop_current(self, signum: int) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signum)
        try:
            process.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Stop it gracefully with ``signum`` (the one ``inbox dev`` received), and stop
        watching the handlers."""
        with self._lock:
            self._stopping.set()
        self._stop_current(signum)

    def watch_handlers(self) -> str | None:
        """Restart the worker whenever the handlers' files change, until ``stop()``; what
        the banner says of it (None: installed handlers, nothing to watch)."""
        if not self._plan.watched:
            return None
        if importlib.util.find_spec("watchfiles") is None:
            return "off: pip install watchfiles, and the worker restarts when the handlers change"
        threading.Thread(target=self._restart_on_changes, daemon=True).start()
        shown = ", ".join(str(p) for p in self._plan.watched)
        return f"the worker restarts when a .py file changes in {shown}"

    def _restart_on_changes(self) -> None:
        from watchfiles import PythonFilter, watch

        data_dir = self._plan.settings.database.data_dir.resolve()
        changes = watch(
            *self._plan.watched,
            watch_filter=PythonFilter(ignore_paths=[data_dir]),
            stop_event=self._stopping,
            raise_interrupt=False,
        )
        for batch in changes:
            if self._stopping.is_set():
                return
            self._restart(sorted({Path(path) for _change, path in batch}))

    def _restart(self, changed: list[Path]) -> None:
        names = ", ".join(_shown(path) for path in changed[:3])
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        say(f"inbox dev: {names}{more} changed; restarting the worker")
        self._stop_current(signal.SIGTERM)
        problem = check_handlers(self._plan)
        if problem is not None:
            say(
                f"inbox dev: {problem}; no worker runs until they load (events wait in the"
                " queue), fix them and save"
            )
            return
        self.start()


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
