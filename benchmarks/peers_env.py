"""``python -m benchmarks peers-env [DIR]``: make the peers' virtual environment.

    python -m benchmarks peers-env          # benchmarks/.peers-venv, found by the benchmarks
    python -m benchmarks peers-env DIR      # elsewhere; INBOX_BENCH_PEERS_PYTHON=DIR/bin/python

It creates a virtual environment with this interpreter's ``venv`` (or reuses the one at DIR)
and installs ``benchmarks/peers.txt`` into it: the peers at the versions the committed
results name. The same by hand: ``python3 -m venv DIR && DIR/bin/pip install -r
benchmarks/peers.txt``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks._peers import (
    PEERS_ENV_VAR,
    PEERS_REQUIREMENTS,
    PEERS_VENV,
    peer_versions,
    venv_python,
)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks peers-env", description=__doc__)
    p.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=PEERS_VENV,
        help="where to make it (default: benchmarks/.peers-venv)",
    )
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    venv: Path = args.dir
    python = venv_python(venv)
    if not python.exists():
        print(f"creating {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    print(f"installing {PEERS_REQUIREMENTS.name} into {venv}", flush=True)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(PEERS_REQUIREMENTS)], check=False
    )
    if done.returncode != 0:
        print(f"pip could not install {PEERS_REQUIREMENTS}", file=sys.stderr)
        return 1
    print(f"peers: {peer_versions(str(python))}")
    if venv.absolute() != PEERS_VENV:
        print(f"the benchmarks use it with {PEERS_ENV_VAR}={python} (or --peers-python)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
