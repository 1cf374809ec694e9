"""An HTTP load driver for the receiver benchmarks, and the signed requests it sends.

``drive_raw`` is a minimal HTTP/1.1 keep-alive client on raw sockets, with the requests
encoded before the clock starts, so that on a small machine the driver's own cost stays far
below the server's; ``drive`` does the same through httpx (which is itself the bottleneck on
2 cores; kept to show that). Both count each response by its outcome: the receiver's
``{"status": "accepted"|"duplicate"}`` for a 2xx, else the status code.
"""

from __future__ import annotations

import collections
import functools
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import anyio.streams.buffered
import httpx

from inbox._providers import Signer, build_signer

# A fixed benchmark secret, configured on the benchmark's `inbox serve` source.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # noqa: S105
SOURCE = "bench"

Request = tuple[bytes, dict[str, str]]


@dataclass
class Run:
    requests: int
    seconds: float
    latencies: list[float]
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def failures(self) -> int:
        """Responses that were not a 2xx."""
        return sum(n for outcome, n in self.outcomes.items() if not outcome.startswith("2xx"))

    def percentile(self, p: float) -> float:
        """The p-quantile (0..1) of the latencies, in ms."""
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def outcome_of(status: int, body: bytes) -> str:
    """``2xx accepted``, ``2xx duplicate``, ``2xx`` (no status said), or ``HTTP 503`` etc."""
    if not 200 <= status < 300:
        return f"HTTP {status}"
    try:
        said = json.loads(body).get("status")
    except (ValueError, AttributeError):
        said = None
    return f"2xx {said}" if isinstance(said, str) else "2xx"


@functools.cache
def _signer() -> Signer:
    return build_signer("standard-webhooks", secrets=[SECRET])


def sign(body: bytes, msg_id: str, now: float) -> Request:
    """A Standard Webhooks request as a provider sends it: the body, signed, with its id."""
    headers = _signer().sign(body=body, url="", now=now, msg_id=msg_id)
    return body, {"content-type": "application/json", **headers}


def signed_requests(n: int) -> list[Request]:
    """``n`` validly signed Standard Webhooks requests, each a new event (a unique id)."""
    now = time.time()
    return [
        sign(
            json.dumps({"type": "invoice.paid", "data": {"n": i, "amount": 4200}}).encode(),
            f"msg_{uuid.uuid4().hex}",
            now,
        )
        for i in range(n)
    ]


async def drive(url: str, requests: Sequence[Request], concurrency: int) -> Run:
    """Post every request through httpx from ``concurrency`` keep-alive connections."""
    latencies: list[float] = []
    outcomes: collections.Counter[str] = collections.Counter()
    next_index = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:

        async def worker() -> None:
            nonlocal next_index
            while next_index < len(requests):
                body, headers = requests[next_index]
                next_index += 1
                started = time.perf_counter()
                response = await client.post(url, content=body, headers=headers)
                latencies.append(time.perf_counter() - started)
                outcomes[outcome_of(response.status_code, response.content)] += 1

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
        seconds = time.perf_counter() - started
    return Run(len(requests), seconds, latencies, outcomes)


def _encode(host: str, port: int, path: str, requests: Sequence[Request]) -> list[bytes]:
    wire = []
    for body, headers in requests:
        head = f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        wire.append(head.encode() + body)
    return wire


async def drive_raw(url: str, requests: Sequence[Request], concurrency: int) -> Run:
    """The same load from pre-encoded requests on raw keep-alive sockets, taken in order."""
    parsed = httpx.URL(url)
    host, port, path = parsed.host, parsed.port or 80, parsed.raw_path.decode()
    wire = _encode(host, port, path, requests)
    latencies: list[float] = []
    outcomes: collections.Counter[str] = collections.Counter()
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
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
                body = await buffered.receive_exactly(length)
                latencies.append(time.perf_counter() - started)
                outcomes[outcome_of(int(head.split(b" ", 2)[1]), body)] += 1

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    return Run(len(requests), time.perf_counter() - started, latencies, outcomes)
