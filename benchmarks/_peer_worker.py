"""The peers' side of benchmarks.processing: runs in the peers' own virtual environment
(``benchmarks/peers.txt``, made by ``python -m benchmarks peers-env``).

Not imported by the product's benchmarks (it imports procrastinate / pgqueuer, which the
product's environment does not have); ``benchmarks.processing`` runs it as a subprocess:

    benchmarks/.peers-venv/bin/python benchmarks/_peer_worker.py install pgqueuer URL
    ... enqueue SYSTEM URL N                      # the backlog, through the peer's own API
    ... work SYSTEM URL [--driver] [--batch-size] [--concurrency] [--record FILE] [--pool N]
    ... write SYSTEM URL --count N --gap-ms LO-HI --out FILE [--driver]

SYSTEM is ``pgqueuer`` or ``procrastinate``. ``work`` runs the peer's documented worker API
with a no-op job until SIGTERM/SIGINT; with ``--record`` the job appends
``key <time.time()>`` to FILE when it starts (for the wake-latency figure); with ``--pool N``
(PGQueuer) the job does the benchmarks' business INSERT instead, through an asyncpg pool of N
connections, as a team using PGQueuer would write it (the job runs after PGQueuer's dequeue
committed, so the INSERT is its own transaction, not atomic with the job). ``write`` enqueues
one job at a time and appends ``key <time.time() after the commit returned>`` to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import sys
import time
from typing import Any

QUEUE = "bench"
ENTRYPOINT = "noop"


# --- the record file ------------------------------------------------------------------------


class Recorder:
    """Appends ``key time`` lines with one write(2) each: microseconds, no buffering."""

    def __init__(self, path: str | None) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if path else None

    def __call__(self, key: str) -> None:
        if self._fd is not None:
            os.write(self._fd, f"{key} {time.time():.6f}\n".encode())


# --- PGQueuer -------------------------------------------------------------------------------


async def _pgq_driver(url: str, driver: str) -> Any:
    if driver == "asyncpg":
        import asyncpg
        from pgqueuer.db import AsyncpgDriver

        return AsyncpgDriver(await asyncpg.connect(**_asyncpg_params(url)))
    import psycopg
    from pgqueuer.db import PsycopgDriver

    return PsycopgDriver(await psycopg.AsyncConnection.connect(url, autocommit=True))


def _asyncpg_params(url: str) -> dict[str, Any]:
    """asyncpg does not read libpq key=value strings: pass the parts as keywords."""
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(url)
    names = {"host": "host", "port": "port", "user": "user", "password": "password"}
    out: dict[str, Any] = {names[k]: v for k, v in params.items() if k in names and v}
    out["database"] = params.get("dbname")
    return out


async def pgq_install(url: str) -> None:
    from pgqueuer.queries import Queries

    await Queries(await _pgq_driver(url, "psycopg")).install()


async def pgq_enqueue(url: str, count: int) -> None:
    from pgqueuer.queries import Queries

    queries = Queries(await _pgq_driver(url, "psycopg"))
    chunk = 10_000
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        await queries.enqueue([ENTRYPOINT] * n, [None] * n, [0] * n)


async def pgq_work(args: argparse.Namespace) -> None:
    from datetime import timedelta

    from pgqueuer.models import Job
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    record = Recorder(args.record)
    qm = QueueManager(Queries(await _pgq_driver(args.url, args.driver)))

    if args.pool:
        import asyncpg

        pool = await asyncpg.create_pool(
            **_asyncpg_params(args.url), min_size=args.pool, max_size=args.pool
        )

        @qm.entrypoint(ENTRYPOINT)
        async def business(job: Job) -> None:
            # The same row as pg-inbox's benchmarks._apps:business handler writes.
            await pool.execute(
                "insert into bench_business (event_id, amount) values ($1, $2)", job.id, 4200
            )

    else:

        @qm.entrypoint(ENTRYPOINT)
        async def noop(job: Job) -> None:
            if args.record:
                record((job.payload or b"").decode())

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, qm.shutdown.set)
    print("ready", flush=True)
    await qm.run(
        batch_size=args.batch_size,
        dequeue_timeout=timedelta(seconds=30),
        max_concurrent_tasks=args.concurrency or None,
    )


async def pgq_write(args: argparse.Namespace) -> None:
    from pgqueuer.queries import Queries

    queries = Queries(await _pgq_driver(args.url, args.driver))
    out = Recorder(args.out)
    lo, hi = args.gap
    for i in range(args.count):
        key = f"k{i}"
        await queries.enqueue(ENTRYPOINT, key.encode())  # autocommit: returns after commit
        out(key)
        await asyncio.sleep(random.uniform(lo, hi) / 1000)


# --- procrastinate -------------------------------------------------------------------------


def _procrastinate_app(url: str, record: Recorder | None = None) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name=ENTRYPOINT, queue=QUEUE)
    async def noop(key: str = "") -> None:
        if record is not None and key:
            record(key)

    return app


async def pcr_install(url: str) -> None:
    app = _procrastinate_app(url)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def pcr_enqueue(url: str, count: int) -> None:
    app = _procrastinate_app(url)
    task = app.tasks[ENTRYPOINT]
    chunk = 5_000
    async with app.open_async():
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            await task.batch_defer_async(*({} for _ in range(n)))


async def pcr_work(args: argparse.Namespace) -> None:
    app = _procrastinate_app(args.url, Recorder(args.record) if args.record else None)
    async with app.open_async():
        print("ready", flush=True)
        await app.run_worker_async(
            queues=[QUEUE],
            concurrency=args.concurrency or 1,
            wait=True,
            listen_notify=True,
            fetch_job_polling_interval=5.0,
            delete_jobs=args.delete_jobs,
            install_signal_handlers=True,
        )


async def pcr_write(args: argparse.Namespace) -> None:
    app = _procrastinate_app(args.url)
    task = app.tasks[ENTRYPOINT]
    out = Recorder(args.out)
    lo, hi = args.gap
    async with app.open_async():
        for i in range(args.count):
            key = f"k{i}"
            await task.defer_async(key=key)  # its own transaction: returns after commit
            out(key)
            await asyncio.sleep(random.uniform(lo, hi) / 1000)


# --- command line ---------------------------------------------------------------------------


def _gap(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    return float(lo), float(hi or lo)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="_peer_worker.py")
    p.add_argument("command", choices=("install", "enqueue", "work", "write"))
    p.add_argument("system", choices=("pgqueuer", "procrastinate"))
    p.add_argument("url")
    p.add_argument("count", nargs="?", type=int, default=0)
    p.add_argument("--driver", choices=("psycopg", "asyncpg"), default="psycopg")
    p.add_argument("--batch-size", type=int, default=10)
    p.add_argument("--concurrency", type=int, default=0)
    p.add_argument("--pool", type=int, default=0, help="PGQueuer: INSERT via an asyncpg pool")
    p.add_argument("--delete-jobs", default="never", choices=("never", "successful", "always"))
    p.add_argument("--record", default=None)
    p.add_argument("--out", default=None)
    p.add_argument("--gap-ms", dest="gap", type=_gap, default=(20.0, 80.0))
    args = p.parse_args(argv)
    if args.command == "write" and not args.count:
        args.count = 200
    pgq = args.system == "pgqueuer"
    runs = {
        "install": lambda: (pgq_install if pgq else pcr_install)(args.url),
        "enqueue": lambda: (pgq_enqueue if pgq else pcr_enqueue)(args.url, args.count),
        "work": lambda: (pgq_work if pgq else pcr_work)(args),
        "write": lambda: (pgq_write if pgq else pcr_write)(args),
    }
    if pgq:
        # The loop PGQueuer's own CLI (`pgq run`) serves on: uvloop, which its package
        # requires. On asyncio's loop its no-op worker spent ~20 % more CPU a job (47 -> 37 us).
        import uvloop

        uvloop.run(runs[args.command]())
    else:
        asyncio.run(runs[args.command]())  # as procrastinate's CLI runs its worker
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
