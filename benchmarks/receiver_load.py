"""Receiver throughput and acknowledgement latency, on loopback.

Starts `inbox serve` on a fresh, migrated database, pre-signs N Standard Webhooks requests
(unique ids, so every one is a new event: one INSERT + commit each), and posts them from C
concurrent keep-alive connections (a minimal anyio HTTP/1.1 client; ``--driver httpx`` for
httpx, which is itself the bottleneck on a small machine). The same driver is then pointed at a
no-op ASGI endpoint on the same uvicorn, to show how much of the ceiling is the driver.
Each cell is the median of --runs runs. Bounded: --requests per run, loopback only.

    PYTHONPATH=. .venv/bin/python benchmarks/receiver_load.py \\
        --database-url postgresql://postgres@127.0.0.1:5432/postgres --requests 3000
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.streams.buffered
import httpx
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from inbox import _migrate
from inbox._settings import SourceSettings
from inbox.verifiers import build_signer

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # noqa: S105 - a fixed benchmark secret


@dataclass
class Run:
    requests: int
    seconds: float
    latencies: list[float]
    failures: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
    raise SystemExit(f"{url} never became healthy")


def signed_requests(n: int) -> list[tuple[bytes, dict[str, str]]]:
    signer = build_signer("standard-webhooks", secrets=[SECRET])
    now = time.time()
    out = []
    for i in range(n):
        msg_id = f"msg_{uuid.uuid4().hex}"
        body = json.dumps({"type": "invoice.paid", "data": {"n": i, "amount": 4200}}).encode()
        headers = signer.sign(body=body, url="", now=now, msg_id=msg_id)
        out.append((body, {"content-type": "application/json", **headers}))
    return out


async def drive(url: str, requests: list[tuple[bytes, dict[str, str]]], concurrency: int) -> Run:
    latencies: list[float] = []
    failures = 0
    next_index = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal next_index, failures
            while next_index < len(requests):
                body, headers = requests[next_index]
                next_index += 1
                started = time.perf_counter()
                response = await client.post(url, content=body, headers=headers)
                latencies.append(time.perf_counter() - started)
                failures += response.status_code != 200

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
        seconds = time.perf_counter() - started
    return Run(len(requests), seconds, latencies, failures)


async def drive_raw(
    url: str, requests: list[tuple[bytes, dict[str, str]]], concurrency: int
) -> Run:
    """The same load from a minimal HTTP/1.1 keep-alive client: pre-encoded requests on raw
    sockets, so the driver's own cost stays far below the server's (httpx's is not)."""
    parsed = httpx.URL(url)
    host, port, path = parsed.host, parsed.port or 80, parsed.raw_path.decode()
    wire = []
    for body, headers in requests:
        head = f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        wire.append(head.encode() + body)
    latencies: list[float] = []
    failures = 0
    next_index = 0

    async def worker() -> None:
        nonlocal next_index, failures
        stream = await anyio.connect_tcp(host, port)
        buffered = anyio.streams.buffered.BufferedByteReceiveStream(stream)
        async with stream:
            while next_index < len(wire):
                payload = wire[next_index]
                next_index += 1
                started = time.perf_counter()
                await stream.send(payload)
                head = await buffered.receive_until(b"\r\n\r\n", 65536)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await buffered.receive_exactly(length)
                latencies.append(time.perf_counter() - started)
                failures += head.split(b" ", 2)[1] != b"200"

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return Run(len(requests), time.perf_counter() - started, latencies, failures)


def noop_server(port: int) -> None:
    """A no-op ASGI endpoint on the same uvicorn settings as `inbox serve`."""
    import uvicorn

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"21")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"status":"accepted"}'})

    uvicorn.run(app, host="127.0.0.1", port=port, access_log=False, log_level="warning")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "INBOX_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument(
        "--driver", choices=["raw", "httpx"], default="raw", help="the load generator's client"
    )
    parser.add_argument("--noop-server", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.noop_server:
        noop_server(args.noop_server)
        return

    name = f"inbox_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    db_url = make_conninfo(args.database_url, dbname=name)
    _migrate.upgrade(db_url)
    servers: list[subprocess.Popen[bytes]] = []
    try:
        port, noop_port = free_port(), free_port()
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "inbox.toml"
            source = SourceSettings(name="bench", verifier="standard-webhooks")
            config.write_text(
                f"[database]\nurl = {json.dumps(db_url)}\n"
                f'[receiver]\nhost = "127.0.0.1"\nport = {port}\n'
                f'[[sources]]\nname = "{source.name}"\nverifier = "{source.verifier}"\n'
                f'secrets = ["{SECRET}"]\n'
            )
            log = open(Path(tmp) / "serve.log", "wb")  # noqa: SIM115 - closed with the server
            servers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "inbox._cli", "--config", str(config), "serve"],
                    stdout=log,
                    stderr=log,
                )
            )
            servers.append(
                subprocess.Popen(
                    [sys.executable, __file__, "--noop-server", str(noop_port)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            wait_healthy(f"http://127.0.0.1:{port}/healthz", servers[0])
            wait_healthy(f"http://127.0.0.1:{noop_port}/", servers[1])
            targets = {
                "inbox serve": f"http://127.0.0.1:{port}/webhooks/bench",
                "no-op endpoint": f"http://127.0.0.1:{noop_port}/",
            }
            rows = []
            driver = drive_raw if args.driver == "raw" else drive
            for concurrency in args.concurrency:
                for label, url in targets.items():
                    anyio.run(driver, url, signed_requests(200), concurrency)  # warm-up
                    runs = [
                        anyio.run(driver, url, signed_requests(args.requests), concurrency)
                        for _ in range(args.runs)
                    ]
                    median = sorted(runs, key=lambda r: r.rps)[len(runs) // 2]
                    rows.append(
                        (
                            label,
                            concurrency,
                            statistics.median(r.rps for r in runs),
                            median.percentile(0.50),
                            median.percentile(0.99),
                            sum(r.failures for r in runs),
                        )
                    )
            log.close()
        with psycopg.connect(db_url) as conn:
            stored = conn.execute("select count(*) from inbox_events").fetchone()
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
            )

    print(
        f"\n{args.requests} requests per run, median of {args.runs} runs, loopback, "
        f"driver {args.driver}, {os.cpu_count()} CPUs shared by driver, server and PostgreSQL, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print(f"{'target':<16}{'conns':>6}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'non-200':>9}")
    for label, concurrency, rps, p50, p99, failures in rows:
        print(f"{label:<16}{concurrency:>6}{rps:>10.0f}{p50:>9.1f}{p99:>9.1f}{failures:>9}")
    print(f"\nevents stored by inbox serve: {stored[0] if stored else 0}")


if __name__ == "__main__":
    main()
