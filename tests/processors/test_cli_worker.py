"""`inbox worker` refuses to start on what it cannot serve, with a clear message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _worker(url: str, app: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inbox", "worker", "--app", app],
        cwd=REPO,
        env={**os.environ, "INBOX_DATABASE__URL": url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_unmigrated_database_is_refused_with_the_fix(empty_db_url: str) -> None:
    result = _worker(empty_db_url, "tests.processors.fault_app:router")
    assert result.returncode == 2
    assert "schema revision base (empty)" in result.stderr
    assert "run `inbox db upgrade` first" in result.stderr


def test_an_app_that_is_not_a_router_is_refused(worker_url: str) -> None:
    result = _worker(worker_url, "tests.processors.fault_app:SLEEP_SECONDS")
    assert result.returncode == 2
    assert "'SLEEP_SECONDS' in tests.processors.fault_app is float, not a processors.Router" in (
        result.stderr
    )
    missing = _worker(worker_url, "tests.processors.nowhere:router")
    assert missing.returncode == 2
    assert "cannot import 'tests.processors.nowhere'" in missing.stderr


def test_a_database_that_does_not_answer_yet_is_waited_for(
    tmp_path: Path, unused_tcp_port: int
) -> None:
    import signal

    from tests._wait import wait_for

    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "inbox", "worker", "--app", "tests.processors.fault_app:router"],
            cwd=REPO,
            env={
                **os.environ,
                "INBOX_DATABASE__URL": f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/x",
            },
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(
                lambda: "database_unavailable" in log.read_text(),
                timeout=60,
                what="the worker to report the database unavailable",
            )
            assert worker.poll() is None  # waiting, not exited
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
        finally:
            if worker.poll() is None:
                worker.kill()


@pytest.mark.parametrize(
    ("event_loop", "loop_module"), [(None, "uvloop"), ("asyncio", "asyncio"), ("uvloop", "uvloop")]
)
def test_the_worker_process_serves_with_the_daemons_collector_and_loop(
    worker_url: str, db_url: str, tmp_path: Path, event_loop: str | None, loop_module: str
) -> None:
    """`inbox worker` is our own process: it raises the collector's thresholds and runs on
    uvloop (installed with the server extra) unless `[worker] event_loop` says asyncio, as
    `inbox serve` does; a host running a Worker in its own loop keeps both (the Worker never
    touches them)."""
    import json

    from inbox._core.runtime.daemon import DAEMON_GC_THRESHOLDS
    from tests._wait import wait_for
    from tests.processors._procs import WorkerProcess
    from tests.processors._support import write_events

    report = tmp_path / "runtime.jsonl"
    loop_env = {"INBOX_WORKER__EVENT_LOOP": event_loop} if event_loop else {}
    worker = WorkerProcess(
        worker_url,
        tmp_path,
        0,
        app="tests.processors.runtime_app:router",
        RUNTIME_REPORT=str(report),
        **loop_env,
    )
    try:
        write_events(db_url, 1)
        wait_for(
            lambda: report.exists() and report.read_text().endswith("\n"),
            timeout=60,
            what="the handler to report its process",
        )
        assert worker.terminate(timeout=30) == 0, worker.output()
    finally:
        worker.close()
    seen = json.loads(report.read_text().splitlines()[0])
    assert seen["thresholds"] == list(DAEMON_GC_THRESHOLDS)
    assert seen["loop"].split(".")[0] == loop_module, seen["loop"]


def test_a_loop_that_is_not_installed_is_refused_with_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inbox._core.errors import ConfigError
    from inbox._core.runtime.daemon import run_daemon_loop
    from inbox._core.runtime.extras import install_command

    async def never() -> None:
        raise AssertionError("ran without its loop")

    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now fails
    with pytest.raises(ConfigError) as refused:
        run_daemon_loop(never, loop="uvloop")
    assert str(refused.value) == (
        f'[worker] event_loop = "uvloop" needs the server extra: {install_command("server")}'
    )


def test_auto_takes_asyncios_loop_where_uvloop_is_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from inbox._core.runtime.daemon import run_daemon_loop

    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run_daemon_loop(loop_module).startswith("uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now fails
    assert run_daemon_loop(loop_module).startswith("asyncio.")
