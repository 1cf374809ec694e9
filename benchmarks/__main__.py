"""``python -m benchmarks NAME [options]``: run one benchmark module by name."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ("ingest", "processing")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"usage: python -m benchmarks {{{','.join(BENCHMARKS)}}} [options]", file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{argv[0]}")
    return int(module.main(argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
