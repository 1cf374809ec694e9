"""Real worker processes for the fault tests: start, kill, restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APP = "tests.processors.fault_app:router"

# For the SIGKILL storms' workers. Nothing notifies what a storm leaves behind: a backlog
# written without NOTIFY, a dead worker's suspects, the next event of a key whose head just
# settled. An idle claim loop finds them only at its next poll: at the 0.5 s the other fault
# tests keep, much of a storm's drain was claim loops asleep.
QUICK_POLL = {"INBOX_WORKER__POLL_INTERVAL_SECONDS": "0.1"}


class WorkerProcess:
    """``inbox worker`` in a child process, its output kept in a log file."""

    def __init__(self, db_url: str, log_dir: Path, n: int, *, app: str = APP, **env: str) -> None:
        self.log_path = log_dir / f"worker-{n}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "inbox", "worker", "--app", app, "--concurrency", "2"],
            cwd=REPO,
            env={
                **os.environ,
                "INBOX_DATABASE__URL": db_url,
                "INBOX_WORKER__POLL_INTERVAL_SECONDS": "0.5",
                "INBOX_WORKER__BATCH_SIZE": "50",
                **env,
            },
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def terminate(self, timeout: float = 60) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def close(self) -> None:
        if self.alive():
            self.kill()
        self._log.close()

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")
