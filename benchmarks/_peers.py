"""Where the peers' environment is, and what is in it.

The peers (procrastinate, PGQueuer and their drivers) run in a virtual environment of their
own, pinned by ``benchmarks/peers.txt`` and made by ``python -m benchmarks peers-env``. The
benchmarks find its interpreter, in this order: ``--peers-python``, the environment variable
``INBOX_BENCH_PEERS_PYTHON``, then ``benchmarks/.peers-venv`` in this checkout. Without
one, the peers' figures are left out with a note.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = [
    "PEERS_ENV_VAR",
    "PEERS_HELP",
    "PEERS_REQUIREMENTS",
    "PEERS_VENV",
    "default_peers_python",
    "peer_versions",
    "peers_label",
    "venv_python",
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PEERS_REQUIREMENTS = HERE / "peers.txt"
PEERS_VENV = HERE / ".peers-venv"
PEERS_ENV_VAR = "INBOX_BENCH_PEERS_PYTHON"
PEERS_HELP = (
    "the peers' interpreter (default: $INBOX_BENCH_PEERS_PYTHON, else benchmarks/.peers-venv,"
    " made by `python -m benchmarks peers-env`)"
)
# The distributions whose versions a report names (peers.txt pins each of them).
PEER_DISTRIBUTIONS = ("procrastinate", "pgqueuer", "psycopg", "asyncpg")


def venv_python(venv: Path) -> Path:
    """The interpreter of the virtual environment at ``venv``."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def default_peers_python() -> str | None:
    """``INBOX_BENCH_PEERS_PYTHON``, else this checkout's ``benchmarks/.peers-venv`` when it
    has been made, else None (no peers)."""
    found = os.environ.get(PEERS_ENV_VAR)
    if found:
        return found
    python = venv_python(PEERS_VENV)
    return str(python) if python.exists() else None


def peers_label(peers_python: str | None) -> str:
    """Where the peers came from, for a report: a path inside the checkout relative to it,
    never a path that only means something on this machine."""
    if not peers_python:
        return "none"
    path = Path(peers_python).absolute()
    if path.is_relative_to(REPO):
        return path.relative_to(REPO).as_posix()
    if peers_python == os.environ.get(PEERS_ENV_VAR):
        return PEERS_ENV_VAR
    return "--peers-python"


def peer_versions(peers_python: str | None) -> str:
    if not peers_python:
        return "peers not installed (python -m benchmarks peers-env)"
    code = (
        "import importlib.metadata as m;"
        "print(', '.join(f'{p} {m.version(p)}' for p in"
        f" {PEER_DISTRIBUTIONS!r}))"
    )
    done = subprocess.run([peers_python, "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()
