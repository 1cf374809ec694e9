"""OpenTelemetry, as a quiet guest: spans only when the host set up an SDK, none otherwise.

pg-inbox depends on the OpenTelemetry API alone (the ``otel`` extra) and never configures
it. A host that exports spans has necessarily imported ``opentelemetry.trace`` (to set its
tracer provider, or through ``opentelemetry-instrument``), so tracing is looked up in
``sys.modules`` and never imported here: an install without the API, or a host that traces
nothing, pays one dictionary look-up per receipt, write or handler run, and ``import inbox``
loads nothing of OpenTelemetry. Once the host's provider is a real one (not the API's
placeholder), the tracer and the W3C propagator are resolved once and kept.

The receiving side (``inbox._receiving.tracing``) and the processing side
(``processors._running.tracing``) build their spans on ``active()``; the writers store
``current_trace_context()`` with each new event, the link a handler's span makes to it: its
W3C ``traceparent`` and ``tracestate``, the two headers a propagator passes on together
(the vendors' entries of a tracestate mean something only with the trace they came with).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

__all__ = [
    "MESSAGING_SYSTEM",
    "NO_TRACE_CONTEXT",
    "TRACESTATE_LIMIT",
    "Otel",
    "TraceContext",
    "active",
    "bounded_tracestate",
    "current_trace_context",
    "trace_id_of",
]

# messaging.system: not one of the semantic conventions' well-known values, so our own name;
# the conventions put a system's own attributes under messaging.{system}.
MESSAGING_SYSTEM = "pg_inbox"
ATTRIBUTE_PREFIX = f"messaging.{MESSAGING_SYSTEM}."
TRACER_NAME = "pg-inbox"

TraceContext = tuple[str | None, str | None]
"""A span's W3C ``(traceparent, tracestate)``; either is None when there is none."""
NO_TRACE_CONTEXT: TraceContext = (None, None)

# W3C Trace Context: "vendors SHOULD propagate at least 512 characters of a combined
# header" (https://www.w3.org/TR/trace-context/#tracestate-limits). What a propagator may
# cut a longer one to is what the log stores (its column's check); the entries it drops
# are the spec's: those over 128 characters first, then from the end.
TRACESTATE_LIMIT = 512
_LONG_ENTRY = 128


def bounded_tracestate(header: str | None) -> str | None:
    """``header`` (a ``tracestate`` as a propagator writes it) cut to ``TRACESTATE_LIMIT``
    characters as W3C Trace Context says; None when it is empty, or nothing is left."""
    if not header:
        return None
    if len(header) <= TRACESTATE_LIMIT:
        return header
    entries = [entry.strip() for entry in header.split(",") if entry.strip()]
    entries = [entry for entry in entries if len(entry) <= _LONG_ENTRY]
    # The newest entries are at the front (a vendor moves its own to the left).
    while entries and len(",".join(entries)) > TRACESTATE_LIMIT:
        entries.pop()
    return ",".join(entries) or None


class Otel:
    """What the spans need from the API, resolved once a real tracer provider is set.

    A plain class, not a dataclass: making one costs a millisecond of ``import inbox``.
    """

    __slots__ = ("context", "propagator", "trace", "tracer")

    def __init__(self, trace: Any, tracer: Any, propagator: Any, context: Any) -> None:
        self.trace = trace  # the opentelemetry.trace module
        self.tracer = tracer
        self.propagator = propagator  # W3C Trace Context, whatever the host's propagators
        self.context = context  # the opentelemetry.context module

    def trace_context(self) -> TraceContext:
        """The current span's context as W3C ``(traceparent, tracestate)``: both None
        without a valid span, the tracestate None when the span carries none."""
        if not self.trace.get_current_span().get_span_context().is_valid:
            return NO_TRACE_CONTEXT
        carrier: dict[str, str] = {}
        self.propagator.inject(carrier)
        return carrier.get("traceparent"), bounded_tracestate(carrier.get("tracestate"))

    def incoming(self, headers: Mapping[str, str]) -> Any:
        """The context to start a receipt's span in: the current one when the host already
        traces the request (its instrumentation read the headers), else the request's own
        ``traceparent`` and ``tracestate``. A malformed or absent traceparent gives an empty
        context: a new trace (a tracestate alone means nothing, and is dropped with it)."""
        if self.trace.get_current_span().get_span_context().is_valid:
            return None  # the current context
        return self.propagator.extract(
            {
                "traceparent": headers.get("traceparent", ""),
                "tracestate": headers.get("tracestate", ""),
            }
        )

    def link(self, traceparent: str | None, tracestate: str | None = None) -> list[Any]:
        """A link to a stored context, its tracestate included (no link when there is no
        traceparent, or it is unreadable)."""
        if not traceparent:
            return []
        carrier = {"traceparent": traceparent}
        if tracestate:
            carrier["tracestate"] = tracestate
        context = self.propagator.extract(carrier)
        span_context = self.trace.get_current_span(context).get_span_context()
        return [self.trace.Link(span_context)] if span_context.is_valid else []

    def root(self) -> Any:
        """An empty context: a span started in it has no parent, whatever is current."""
        return self.context.Context()


_resolved: Otel | None = None


def _resolve(trace: Any) -> Otel:
    global _resolved
    if _resolved is None:
        from importlib.metadata import PackageNotFoundError, version

        from opentelemetry import context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        try:
            ours: str | None = version("pg-inbox")
        except PackageNotFoundError:  # running from a source tree that was never installed
            ours = None
        _resolved = Otel(
            trace=trace,
            tracer=trace.get_tracer(TRACER_NAME, ours),
            propagator=TraceContextTextMapPropagator(),
            context=context,
        )
    return _resolved


def active() -> Otel | None:
    """The API's parts when the host set a real tracer provider; None otherwise."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return _resolve(trace)


def current_trace_context() -> TraceContext:
    """The current span's ``(traceparent, tracestate)`` for a new event's row; both None
    when not tracing."""
    otel = active()
    return NO_TRACE_CONTEXT if otel is None else otel.trace_context()


def trace_id_of(traceparent: str | None) -> str | None:
    """The trace id of a stored ``traceparent`` (what a trace viewer searches for); None
    when there is none or it is not one."""
    if traceparent is None:
        return None
    parts = traceparent.split("-")
    trace_id = parts[1] if len(parts) >= 4 else ""
    valid = len(trace_id) == 32 and all(c in "0123456789abcdef" for c in trace_id)
    return trace_id if valid and trace_id != "0" * 32 else None
