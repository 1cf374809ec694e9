"""The two thin shells over ``inbox._receiving.receiver``: the same steps (``_Delivery``),
sync and async.

Every adapter ends here: the ASGI app calls ``receive_async``; the Django view and the Flask
blueprint call ``receive``. Only the I/O differs: reading the body and awaiting the write.
The async shell also bounds the write with ``write_timeout_seconds``; the sync shell relies
on the writer's pool timeout and the server's statement timeout that ``receiver_writer_kwargs``
asks for (a thread cannot be cancelled).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterable, Callable, Mapping
from typing import Any

from inbox._core.config.settings import Settings
from inbox._core.errors import DatabaseUnavailableError, InvalidWriteError, MigrationError
from inbox._receiving.delivery import BodyCollector, PendingWrite, ReceiverResponse
from inbox._receiving.receiver import Receiver
from inbox._receiving.tracing import traced_receipt, traced_receipt_async
from inbox._writing.plan import WriteResult
from inbox._writing.writer import InboxWriter
from inbox._writing.writer_async import AsyncInboxWriter

__all__ = ["READ_CHUNK_BYTES", "receive", "receive_async", "receiver_writer_kwargs"]

READ_CHUNK_BYTES = 64 * 1024


def receiver_writer_kwargs(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for an ``InboxWriter`` / ``AsyncInboxWriter`` that serves a receiver.

    Every wait is bounded by ``receiver.write_timeout_seconds``: waiting for a pooled
    connection (the pool timeout), connecting (libpq's ``connect_timeout``, whole seconds,
    at least 2) and the statement itself (``statement_timeout``, enforced by the server even
    when the client cannot cancel, as in a sync view; per transaction behind a pooler).
    """
    timeout = settings.receiver.write_timeout_seconds
    return {
        "notify": settings.database.notify,
        "notify_interval_seconds": settings.database.notify_interval_seconds,
        "min_size": settings.database.pool_min_size,
        "max_size": settings.database.pool_max_size,
        "timeout_seconds": timeout,
        "pooler": settings.database.pooler,
        "prepared_statements": settings.database.prepared_statements,
        "statement_timeout_seconds": timeout,
        "connection_kwargs": {
            "application_name": "pg-inbox receiver",
            "connect_timeout": max(2, math.ceil(timeout)),
        },
    }


# What a write raises that a receiver answers (503, or 400 for bad input) instead of a 500;
# an async write past its deadline is a TimeoutError.
WRITE_ERRORS = (DatabaseUnavailableError, MigrationError, InvalidWriteError, TimeoutError)


class _Delivery:
    """One request's way through the receiver, free of I/O: the shells below feed it the
    body and make the write, so the steps are written once for both."""

    def __init__(
        self,
        receiver: Receiver,
        source_name: str,
        *,
        method: str,
        url: str,
        headers: Mapping[str, str],
    ) -> None:
        self._receiver = receiver
        self._request = (method, url, headers)
        self._admitted = receiver.admit(source_name, headers)
        limit = 0 if isinstance(self._admitted, ReceiverResponse) else self._admitted.max_body_bytes
        self._collector = BodyCollector(limit)
        self._too_large = False
        self._started = 0.0

    @property
    def reading(self) -> bool:
        """Whether the body is still wanted (the source exists, the body is within bounds)."""
        return not (self._too_large or isinstance(self._admitted, ReceiverResponse))

    def add(self, chunk: bytes) -> bool:
        """The body's next chunk; False: stop reading."""
        self._too_large = not self._collector.add(chunk)
        return not self._too_large

    def ready(self) -> PendingWrite | ReceiverResponse:
        """Once the body is read: the write to make, or the reply that refuses it."""
        admitted = self._admitted
        if isinstance(admitted, ReceiverResponse):
            return admitted
        if self._too_large:
            return self._receiver.body_too_large(admitted)
        method, url, headers = self._request
        self._started = time.perf_counter()
        return self._receiver.prepare(
            admitted, method=method, url=url, headers=headers, body=self._collector.body
        )

    def written(self, pending: PendingWrite, result: WriteResult) -> ReceiverResponse:
        return self._receiver.written(pending, result, time.perf_counter() - self._started)

    def failed(self, pending: PendingWrite, exc: Exception) -> ReceiverResponse:
        if isinstance(exc, TimeoutError):
            # The write may still commit; the 503 makes the provider retry, and the unique
            # key turns that retry into a duplicate. What never happens is a 2xx without a
            # commit.
            seconds = self._receiver.write_timeout_seconds
            return self._receiver.write_failed(
                pending, "write_timeout", f"no commit within {seconds}s"
            )
        reason = "invalid_write" if isinstance(exc, InvalidWriteError) else "database_unavailable"
        return self._receiver.write_failed(pending, reason, str(exc))


@traced_receipt
def receive(
    receiver: Receiver,
    writer: InboxWriter,
    source_name: str,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    read: Callable[[int], bytes],
) -> ReceiverResponse:
    """Receive one webhook from synchronous code; ``read(n)`` returns b"" at the end."""
    delivery = _Delivery(receiver, source_name, method=method, url=url, headers=headers)
    while delivery.reading and (chunk := read(READ_CHUNK_BYTES)):
        delivery.add(chunk)
    pending = delivery.ready()
    if isinstance(pending, ReceiverResponse):
        return pending
    try:
        result = writer.write(**pending.write_args())
    except WRITE_ERRORS as exc:
        return delivery.failed(pending, exc)
    return delivery.written(pending, result)


@traced_receipt_async
async def receive_async(
    receiver: Receiver,
    writer: AsyncInboxWriter,
    source_name: str,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    chunks: AsyncIterable[bytes],
) -> ReceiverResponse:
    """Receive one webhook from async code; ``chunks`` is the body as it streams in."""
    delivery = _Delivery(receiver, source_name, method=method, url=url, headers=headers)
    if delivery.reading:
        async for chunk in chunks:
            if not delivery.add(chunk):
                break
    pending = delivery.ready()
    if isinstance(pending, ReceiverResponse):
        return pending
    try:
        # asyncio's own timeout, not anyio's cancel scope: the writer's group commit runs on
        # asyncio anyway, and the scope's cost showed on the receiver's hot path
        # (benchmarks/ANALYSIS.md, "Ingest through HTTP").
        async with asyncio.timeout(receiver.write_timeout_seconds):
            result = await writer.write(**pending.write_args())
    except WRITE_ERRORS as exc:
        return delivery.failed(pending, exc)
    return delivery.written(pending, result)
