"""Observability under the least roles: the receiver role stores a receipt's trace context,
the worker role reads it back and reads the queue gauges of its /metrics."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from inbox import InboxWriter
from processors import WorkerMetrics
from tests._spans import Spans, in_vendors_trace, traceparent_of
from tests._wait import rows
from tests.processors._support import write_events
from tests.security.conftest import Roles


def test_the_receiver_role_stores_the_trace_context(
    spans: Spans, db_url: str, roles: Roles
) -> None:
    with (
        InboxWriter(roles.url("receiver")) as writer,
        trace.get_tracer("a host").start_as_current_span(
            "request", context=in_vendors_trace(("rojo", "00f067aa0ba902b7"))
        ) as span,
    ):
        event_id = writer.write("shop", "k1", b"{}").event_id
    stored = rows(
        db_url, "select traceparent, tracestate from inbox_events where id = %s", [event_id]
    )
    assert stored == [(traceparent_of(span), "rojo=00f067aa0ba902b7")]


def test_the_worker_role_reads_the_queue_gauges(db_url: str, roles: Roles) -> None:
    write_events(roles.url("receiver"), 3)
    metrics = WorkerMetrics()
    metrics.watch_queue(roles.url("worker"))
    sample: Any = metrics.registry.get_sample_value
    assert sample("inbox_queue_read_success") == 1
    assert sample("inbox_queue_events", {"source": "shop", "state": "pending"}) == 3
    assert sample("inbox_queue_events", {"source": "shop", "state": "dead"}) == 0
