"""A handler run's span, linked to its event's receipt.

Per the OpenTelemetry messaging conventions a handler run is a ``process`` operation, kind
CONSUMER, named ``process {source}``. It starts a trace of its own and *links* to the
receipt's span (the context stored with the event): an event is processed long after, and
maybe many times after, the request that brought it, so parenting every attempt and replay
under that request would stretch one trace over hours. Each retry and each replay is a span
of its own, linked the same way. The span is current while the handler runs (a sync
handler's thread inherits it), so a host that instruments psycopg sees the handler's
statements as its children. A batch handler's call (``Router.on_batch``) is one span
that links to each of its events' receipts and counts them. Nothing happens unless the host
set up an SDK.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext

from inbox._core.tracing import ATTRIBUTE_PREFIX, MESSAGING_SYSTEM, Otel, active
from processors._model.claimed import ClaimedEvent
from processors._model.event import Retry

__all__ = ["handler_span"]


# Without an SDK: no generator made and run per handler, on every event's path.
_UNTRACED = nullcontext()


def handler_span(items: Sequence[ClaimedEvent], handler: str) -> AbstractContextManager[None]:
    """Trace one call of ``handler``, with the event of ``items`` (or, for a batch handler,
    its events, all of one source): errors and retries are recorded on the span, and
    propagate unchanged."""
    otel = active()
    if otel is None:
        return _UNTRACED
    return _traced(otel, items, handler)


@contextmanager
def _traced(otel: Otel, items: Sequence[ClaimedEvent], handler: str) -> Iterator[None]:
    event = items[0].event
    attributes: dict[str, str | int | bool] = {
        "messaging.system": MESSAGING_SYSTEM,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": event.source,
        f"{ATTRIBUTE_PREFIX}handler": handler,
    }
    if len(items) == 1:
        attributes["messaging.message.id"] = str(event.id)
        attributes["messaging.message.body.size"] = len(event.body)
        attributes[f"{ATTRIBUTE_PREFIX}attempt"] = event.attempt
        attributes[f"{ATTRIBUTE_PREFIX}replay"] = event.is_replay
        if event.type is not None:
            attributes[f"{ATTRIBUTE_PREFIX}event_type"] = event.type
        if event.replay_id is not None:
            attributes[f"{ATTRIBUTE_PREFIX}replay_id"] = event.replay_id
    else:
        # The messaging conventions' batch attribute; the events' own are on their links'
        # receipts and in their attempts.
        attributes["messaging.batch.message_count"] = len(items)
    links = [link for item in items for link in otel.link(item.traceparent, item.tracestate)]
    with otel.tracer.start_as_current_span(
        f"process {event.source}",
        context=otel.root(),
        kind=otel.trace.SpanKind.CONSUMER,
        links=links,
        attributes=attributes,
        # Recorded below: a Retry is a request, not an error.
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield
        except Retry as retry:
            span.set_attribute(f"{ATTRIBUTE_PREFIX}outcome", "retry")
            span.add_event(
                "retry_requested",
                {"after_seconds": retry.after, "reason": retry.reason},
            )
            raise
        except BaseException as exc:
            span.set_attribute(f"{ATTRIBUTE_PREFIX}outcome", "failed")
            span.set_attribute("error.type", type(exc).__qualname__)
            span.record_exception(exc)
            span.set_status(otel.trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}")
            raise
        span.set_attribute(f"{ATTRIBUTE_PREFIX}outcome", "processed")
