"""`inbox dev`, the main job: embedded PostgreSQL, receiver and worker, from one command."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests._wait import scalar, wait_for

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_dev_receives_a_signed_webhook_and_the_example_handler_records_it(
    tmp_path: Path, server_dir: Path, unused_tcp_port: int
) -> None:
    config = tmp_path / "inbox.toml"
    config.write_text(
        (REPO / "config" / "inbox.toml")
        .read_text()
        .replace('data_dir = ".inbox"', f'data_dir = "{server_dir / "data"}"')
        .replace("port = 8000", f"port = {unused_tcp_port}"),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_")}
    out = (tmp_path / "dev.log").open("w+")
    dev = subprocess.Popen(
        [sys.executable, "-m", "inbox", "--config", str(config), "dev"],
        cwd=REPO,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    try:

        def log() -> str:
            out.flush()
            return (tmp_path / "dev.log").read_text()

        def healthy() -> bool:
            assert dev.poll() is None, log()
            try:
                return httpx.get(f"http://127.0.0.1:{unused_tcp_port}/healthz").is_success
            except httpx.TransportError:
                return False

        wait_for(healthy, timeout=90, what="inbox dev to serve")
        match = re.search(r"database\s+(\S+)", log())
        assert match, log()
        database = match.group(1)

        sent = subprocess.run(
            [sys.executable, "-m", "inbox", "--config", str(config), "send", "stripe"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "HTTP 200" in sent.stdout
        wait_for(
            lambda: scalar(database, "select count(*) from payments") == 1,
            timeout=60,
            what="the example handler's payment row",
        )
        assert scalar(database, "select outcome from inbox_attempts") == "processed"
    finally:
        dev.send_signal(signal.SIGINT)
        code = dev.wait(timeout=90)
        out.close()
    assert code == 0
