"""Real worker processes and the ``inbox`` command line, against a test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from tests._commands import REPO, run_inbox
from tests._wait import scalar, wait_for
from tests.operator._app import CREATE_EFFECTS

WORKER_ENV = {
    "INBOX_WORKER__POLL_INTERVAL_SECONDS": "0.5",
    "INBOX_WORKER__BACKOFF_BASE_SECONDS": "0.01",
    "INBOX_WORKER__BACKOFF_MAX_SECONDS": "0.05",
}


def env_for(url: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "INBOX_DATABASE__URL": url, "NO_COLOR": "1", **extra}
    env.pop("INBOX_CONFIG", None)
    return env


def inbox(
    url: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``inbox ARGS`` in a subprocess (stdin closed: never a terminal)."""
    return run_inbox(*args, env=env or env_for(url))


@contextmanager
def workers(url: str, app: str, count: int = 2, **settings: str) -> Iterator[None]:
    """``count`` ``inbox worker --app APP`` processes; stopped with SIGTERM, which they
    answer by finishing their batch and exiting 0."""
    env = env_for(url, **WORKER_ENV, **settings)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "inbox", "worker", "--app", app],
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(count)
    ]
    try:
        # Up means listening, and then the SIGTERM handler is in place too (it is installed
        # before the worker connects): a signal earlier than that would kill, not stop.
        def up() -> bool:
            exited = [p.returncode for p in procs if p.poll() is not None]
            assert not exited, f"a worker process exited early with {exited}"
            return _listeners(url) >= count

        wait_for(
            up,
            timeout=60,
            what=f"{count} worker processes to listen",
        )
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        codes = []
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            codes.append((proc.returncode, err.decode(errors="replace")[-2000:]))
    assert [code for code, _ in codes] == [0] * count, codes


def _listeners(url: str) -> int:
    return int(
        scalar(
            url,
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and starts_with(application_name, 'pg-inbox listener ')",
        )
    )


def create_effects(url: str) -> None:
    with psycopg.connect(url) as conn:
        conn.execute(CREATE_EFFECTS)
