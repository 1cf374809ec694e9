"""The two thin shells over ``inbox._receiving.receiver``: the same four steps, sync and async.

Every adapter ends here: the ASGI app calls ``receive_async``; the Django view and the Flask
blueprint call ``receive``. Only the I/O differs: reading the body and awaiting the write.
The async shell also bounds the write with ``write_timeout_seconds``; the sync shell relies
on the writer's pool timeout and the ``statement_timeout`` of ``receiver_writer_kwargs``
(a thread cannot be cancelled).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterable, Callable, Mapping
from typing import Any

import anyio

from inbox._core.errors import DatabaseUnavailableError, InvalidWriteError, MigrationError
from inbox._core.settings import Settings
from inbox._receiving.receiver import BodyCollector, PendingWrite, Receiver, ReceiverResponse
from inbox._receiving.tracing import traced_receipt, traced_receipt_async
from inbox._writing.writer import InboxWriter
from inbox._writing.writer_async import AsyncInboxWriter

__all__ = ["READ_CHUNK_BYTES", "receive", "receive_async", "receiver_writer_kwargs"]

READ_CHUNK_BYTES = 64 * 1024


def receiver_writer_kwargs(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for an ``InboxWriter`` / ``AsyncInboxWriter`` that serves a receiver.

    Every wait is bounded by ``receiver.write_timeout_seconds``: waiting for a pooled
    connection (the pool timeout), connecting (libpq's ``connect_timeout``, whole seconds,
    at least 2) and the statement itself (``statement_timeout``, enforced by the server even
    when the client cannot cancel, as in a sync view).
    """
    timeout = settings.receiver.write_timeout_seconds
    return {
        "notify": settings.database.notify,
        "notify_interval_seconds": settings.database.notify_interval_seconds,
        "min_size": settings.database.pool_min_size,
        "max_size": settings.database.pool_max_size,
        "timeout_seconds": timeout,
        "connection_kwargs": {
            "application_name": "pg-inbox receiver",
            "connect_timeout": max(2, math.ceil(timeout)),
            "options": f"-c statement_timeout={math.ceil(timeout * 1000)}",
        },
    }


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
    admitted = receiver.admit(source_name, headers)
    if isinstance(admitted, ReceiverResponse):
        return admitted
    collector = BodyCollector(admitted.max_body_bytes)
    while chunk := read(READ_CHUNK_BYTES):
        if not collector.add(chunk):
            return receiver.body_too_large(admitted)
    pending = receiver.prepare(
        admitted, method=method, url=url, headers=headers, body=collector.body
    )
    if isinstance(pending, ReceiverResponse):
        return pending
    started = time.perf_counter()
    try:
        result = writer.write(**pending.write_args())
    except (DatabaseUnavailableError, MigrationError, InvalidWriteError) as exc:
        return _failed(receiver, pending, exc)
    return receiver.written(pending, result, time.perf_counter() - started)


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
    admitted = receiver.admit(source_name, headers)
    if isinstance(admitted, ReceiverResponse):
        return admitted
    collector = BodyCollector(admitted.max_body_bytes)
    async for chunk in chunks:
        if not collector.add(chunk):
            return receiver.body_too_large(admitted)
    pending = receiver.prepare(
        admitted, method=method, url=url, headers=headers, body=collector.body
    )
    if isinstance(pending, ReceiverResponse):
        return pending
    started = time.perf_counter()
    try:
        with anyio.fail_after(receiver.write_timeout_seconds):
            result = await writer.write(**pending.write_args())
    except TimeoutError:
        # The write may still commit; the 503 makes the provider retry, and the unique
        # key turns that retry into a duplicate. What never happens is a 2xx without a commit.
        return receiver.write_failed(
            pending, "write_timeout", f"no commit within {receiver.write_timeout_seconds}s"
        )
    except (DatabaseUnavailableError, MigrationError, InvalidWriteError) as exc:
        return _failed(receiver, pending, exc)
    return receiver.written(pending, result, time.perf_counter() - started)


def _failed(receiver: Receiver, pending: PendingWrite, exc: Exception) -> ReceiverResponse:
    reason = "invalid_write" if isinstance(exc, InvalidWriteError) else "database_unavailable"
    return receiver.write_failed(pending, reason, str(exc))
