"""The ``inbox`` command and Python in child processes, as a user runs them: from the
repository's root, with an environment the test says, never on a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def environment(*, without: tuple[str, ...] = (), **env: str) -> dict[str, str]:
    """This process's environment less the variables whose names start with one of
    ``without`` (settings of the suite's own, such as ``INBOX_``), plus ``env``."""
    kept = {k: v for k, v in os.environ.items() if not (without and k.startswith(without))}
    return {**kept, **env}


def run_python(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` to its end, its output captured; its stdin is ``stdin``, or closed."""
    feed: dict[str, object] = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **feed,
    )


def run_inbox(*args: str, **options: object) -> subprocess.CompletedProcess[str]:
    """``inbox ARGS`` to its end (``run_python``'s options)."""
    return run_python("-m", "inbox", *args, **options)  # type: ignore[arg-type]


def start_serve(config: Path) -> subprocess.Popen[str]:
    """``inbox --config CONFIG serve`` started in a child process, its stderr piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "inbox", "--config", str(config), "serve"],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )


def status_of(method: str, url: str, **request: object) -> int:
    """The HTTP status one request gets, or 0 while nothing listens at ``url`` (yet)."""
    try:
        return httpx.request(method, url, timeout=5, **request).status_code  # type: ignore[arg-type]
    except httpx.TransportError:
        return 0
