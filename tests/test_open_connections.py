"""The suite's own check (tests/_open_connections.py): a test that leaves a connection of
its process open fails, and says where the connection was made."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests._commands import REPO

LEAKY = """
import psycopg

URL = {url!r}
kept = []

def test_leaves_one_open():
    kept.append(psycopg.connect(URL))

def test_closes_its_own():
    with psycopg.connect(URL):
        pass

async def _open_async():
    return await psycopg.AsyncConnection.connect(URL)

def test_leaves_an_async_one_open():
    import anyio
    kept.append(anyio.run(_open_async))
"""


def test_a_connection_left_open_fails_its_test_and_names_where_it_was_made(
    db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "test_leaky.py").write_text(LEAKY.format(url=db_url))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests._open_connections",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_leaky.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "2 failed, 1 passed" in out, out
    assert "1 connection(s) left open" in out
    assert "<psycopg.Connection" in out
    assert "<psycopg.AsyncConnection" in out
    # The stack of each names the line of the test that made it.
    assert "in test_leaves_one_open" in out
    assert "in _open_async" in out
