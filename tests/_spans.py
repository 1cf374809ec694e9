"""Spans collected by the OpenTelemetry SDK's in-memory exporter, in this process (the
``spans`` fixture, a plugin of tests/conftest.py).

The API lets a process set its global tracer provider once, so the session sets it once
(the first test that asks) and each test only switches recording on for itself: spans are
kept while a test holds the ``spans`` fixture, and none are kept otherwise (the other tests
of the session run with the provider set, as in a host that traces, but leave no spans).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState


class _Recorder(SimpleSpanProcessor):
    def __init__(self, exporter: InMemorySpanExporter) -> None:
        super().__init__(exporter)
        self.recording = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.recording:
            super().on_end(span)


@pytest.fixture(scope="session")
def _recorder() -> tuple[_Recorder, InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    recorder = _Recorder(exporter)
    provider.add_span_processor(recorder)
    return recorder, exporter


class Spans:
    """The finished spans of this test."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self._exporter = exporter

    def all(self) -> list[ReadableSpan]:
        return list(self._exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.all() if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.all()}"
        return found[0]


@pytest.fixture
def spans(_recorder: tuple[_Recorder, InMemorySpanExporter]) -> Iterator[Spans]:
    recorder, exporter = _recorder
    exporter.clear()
    recorder.recording = True
    try:
        yield Spans(exporter)
    finally:
        recorder.recording = False
        exporter.clear()


def traceparent_of(span: Any) -> str:
    """The W3C traceparent that names ``span`` (sampled)."""
    context = span.get_span_context()
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def in_vendors_trace(*entries: tuple[str, str]) -> Context:
    """A context whose (remote) span carries a tracestate of ``entries``, as a host's
    instrumentation makes of a request that brought one: a span started in it inherits it."""
    parent = SpanContext(
        trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState(list(entries)),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))
