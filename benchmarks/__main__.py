"""``python -m benchmarks NAME [options]``: run one benchmark by name, or ``all`` of them."""

from __future__ import annotations

import importlib
import sys

# name on the command line -> module in this package (`all` is no module name: a builtin's)
BENCHMARKS = {
    "all": "run_all",
    "ingest": "ingest",
    "receiver_load": "receiver_load",
    "receiver_rss": "receiver_rss",
    "processing": "processing",
    "storm": "storm",
    "console": "console",
    "ordering": "ordering",
    "observability": "observability",
    "retention": "retention",
    "pooler": "pooler",
    "write_latency": "write_latency",
    "peers-env": "peers_env",  # makes the peers' virtual environment; measures nothing
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"usage: python -m benchmarks {{{','.join(BENCHMARKS)}}} [options]", file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{BENCHMARKS[argv[0]]}")
    driver = getattr(module, "DRIVER", None)  # one figure of `all` (benchmarks._report_frame)
    if driver is not None:
        from benchmarks._report_frame import run_driver

        return run_driver(driver, argv[1:])
    return int(module.main(argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
