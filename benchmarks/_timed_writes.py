"""One run of timed ``InboxWriter`` writes from threads, in a process of its own, so that the
writer measured is whichever ``inbox`` comes first on the process's path
(``benchmarks/write_latency`` runs it on this checkout's and on an older commit's):

    python -m benchmarks._timed_writes migrate URL                      # the schema, then exits
    python -m benchmarks._timed_writes write URL THREADS WARMUP DURATION   # prints one JSON line

Each thread writes new events (a ~1 KB body) back to back through one shared writer with a
pool of as many connections as threads; every write that starts inside the measured window
is timed from its call to its return.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from typing import Any

from benchmarks._payloads import EVENT_TYPE, SOURCE, make_body, make_headers

APP_NAME = "pg-inbox bench timed writes"


def timed_writes(url: str, threads: int, warmup: float, duration: float) -> dict[str, Any]:
    """Write from ``threads`` threads for ``warmup`` + ``duration`` seconds; the latencies
    (seconds) of the writes that started in the last ``duration``."""
    from psycopg_pool import ConnectionPool

    from inbox import InboxWriter

    kwargs = {"autocommit": True, "application_name": APP_NAME}
    pool = ConnectionPool(url, min_size=threads, max_size=threads, kwargs=kwargs, open=False)
    pool.open(wait=True)
    writer = InboxWriter(pool=pool)
    tag = uuid.uuid4().hex[:8]
    timed: list[list[float]] = [[] for _ in range(threads)]
    barrier = threading.Barrier(threads + 1)
    window: list[float] = []

    def one(n: int) -> None:
        barrier.wait()
        start, end = window
        i = 0
        while True:
            key = f"{tag}-{n}-{i}"
            i += 1
            body, headers = make_body(key), make_headers(key)
            began = time.perf_counter()
            writer.write(SOURCE, key, body, headers, event_type=EVENT_TYPE)
            took = time.perf_counter() - began
            if began >= end:
                return
            if began >= start:
                timed[n].append(took)

    workers = [threading.Thread(target=one, args=(n,), daemon=True) for n in range(threads)]
    try:
        for w in workers:
            w.start()
        now = time.perf_counter()
        window.extend([now + warmup, now + warmup + duration])
        barrier.wait()
        for w in workers:
            w.join()
        writer.close()
    finally:
        pool.close()
    import inbox

    latencies = [t for per in timed for t in per]
    return {"seconds": duration, "latencies": latencies, "inbox": str(inbox.__file__)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["migrate"] and len(argv) == 2:
        from inbox._core.database import migrate

        migrate.upgrade(argv[1])
        return 0
    if argv[:1] == ["write"] and len(argv) == 5:
        url, threads, warmup, duration = argv[1], int(argv[2]), float(argv[3]), float(argv[4])
        print(json.dumps(timed_writes(url, threads, warmup, duration)))
        return 0
    print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
