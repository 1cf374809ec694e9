"""The receipt's span: one per webhook request, around verifying and writing it.

The span continues the request's ``traceparent`` (or the host's span, when its web
instrumentation already started one); the writer stores the span's context with the event,
and every handler run links to it (``processors._running.tracing``). Per the OpenTelemetry messaging
conventions the receipt is the event's creation context: a ``send`` operation, kind
PRODUCER, named ``receive {source}``. Nothing happens unless the host set up an SDK
(``inbox._core.tracing.active``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from inbox._core.tracing import ATTRIBUTE_PREFIX, MESSAGING_SYSTEM, Otel, active
from inbox._receiving.delivery import ReceiverResponse
from inbox._receiving.metrics import UNKNOWN_SOURCE_LABEL
from inbox._receiving.receiver import Receiver

__all__ = ["traced_receipt", "traced_receipt_async"]

Sync = TypeVar("Sync", bound=Callable[..., ReceiverResponse])
Async = TypeVar("Async", bound=Callable[..., Awaitable[ReceiverResponse]])


def _destination(receiver: Receiver, source_name: str) -> str:
    # A path the sender chose is no span name: unknown sources share one, as in the metrics.
    return source_name if source_name in receiver.sources else UNKNOWN_SOURCE_LABEL


@contextmanager
def _receipt_span(
    otel: Otel, receiver: Receiver, source_name: str, headers: Mapping[str, str]
) -> Iterator[Any]:
    destination = _destination(receiver, source_name)
    with otel.tracer.start_as_current_span(
        f"receive {destination}",
        context=otel.incoming(headers),
        kind=otel.trace.SpanKind.PRODUCER,
        attributes={
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation.type": "send",
            "messaging.operation.name": "receive",
            "messaging.destination.name": destination,
        },
    ) as span:
        yield span


def _record(otel: Otel, span: Any, reply: ReceiverResponse) -> ReceiverResponse:
    span.set_attribute("http.response.status_code", reply.status)
    span.set_attribute(f"{ATTRIBUTE_PREFIX}outcome", reply.outcome)
    if reply.event_id is not None:
        span.set_attribute("messaging.message.id", str(reply.event_id))
    if reply.reason is not None:
        span.set_attribute(f"{ATTRIBUTE_PREFIX}reason", reply.reason)
    if reply.status >= 500:
        # A refusal (4xx) is the receiver doing its job; a 503 is a failure to store.
        span.set_attribute("error.type", reply.reason or str(reply.status))
        span.set_status(otel.trace.StatusCode.ERROR, reply.reason)
    return reply


def traced_receipt(receive: Sync) -> Sync:
    """Wrap ``receive(receiver, writer, source_name, *, headers, ...)`` in a receipt span."""

    @functools.wraps(receive)
    def traced(receiver: Receiver, writer: Any, source_name: str, **kwargs: Any) -> Any:
        otel = active()
        if otel is None:
            return receive(receiver, writer, source_name, **kwargs)
        with _receipt_span(otel, receiver, source_name, kwargs["headers"]) as span:
            return _record(otel, span, receive(receiver, writer, source_name, **kwargs))

    return cast(Sync, traced)


def traced_receipt_async(receive: Async) -> Async:
    """``traced_receipt`` for ``receive_async``."""

    @functools.wraps(receive)
    async def traced(receiver: Receiver, writer: Any, source_name: str, **kwargs: Any) -> Any:
        otel = active()
        if otel is None:
            return await receive(receiver, writer, source_name, **kwargs)
        with _receipt_span(otel, receiver, source_name, kwargs["headers"]) as span:
            return _record(otel, span, await receive(receiver, writer, source_name, **kwargs))

    return cast(Async, traced)
