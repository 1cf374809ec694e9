"""The receiver's Prometheus metrics, in a registry of their own (one per receiver).

A registry per instance, not the process-global default: two receivers in one process (two
apps, or the tests) never collide, and ``/metrics`` shows exactly this receiver's numbers.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

__all__ = ["UNKNOWN_SOURCE_LABEL", "ReceiverMetrics"]

# Requests for unconfigured sources share one label: a label per URL path would let anyone
# grow the registry without bound.
UNKNOWN_SOURCE_LABEL = "(unknown)"

# An acknowledgement should take milliseconds; the upper buckets show a struggling database.
_WRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ReceiverMetrics:
    """Requests by source and outcome, write latency, and rejections by reason."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "inbox_receiver_requests",
            "Webhook requests by source and outcome (accepted, duplicate or a rejection).",
            ["source", "outcome"],
            registry=self.registry,
        )
        self.write_seconds = Histogram(
            "inbox_receiver_write_seconds",
            "Time to append a verified webhook to the inbox (the write's round trip).",
            ["source"],
            buckets=_WRITE_BUCKETS,
            registry=self.registry,
        )
        self.rejections = Counter(
            "inbox_receiver_rejections",
            "Webhook requests refused, by precise reason (never told to the caller).",
            ["source", "reason"],
            registry=self.registry,
        )

        self.unordered = Counter(
            "inbox_receiver_ordering_unmatched",
            "Events of an ordered source whose ordering_key (processed unordered) or order_by"
            " (ordered by arrival) spec found nothing usable in the delivery.",
            ["source", "field"],
            registry=self.registry,
        )
        # The labelled children, found once: ``labels()`` takes a lock and builds its key on
        # every call, a few per cent of `inbox serve`'s CPU under load. Bounded, as the labels
        # are: configured sources (unknown ones share a label), outcomes and reasons.
        self._counted: dict[tuple[str, str, str | None], tuple[Any, Any]] = {}
        self._timed: dict[str, Any] = {}

    def observe(self, source: str, outcome: str, reason: str | None = None) -> None:
        """Count one request; a ``reason`` also counts it as a rejection."""
        children = self._counted.get((source, outcome, reason))
        if children is None:
            children = self._counted[(source, outcome, reason)] = (
                self.requests.labels(source=source, outcome=outcome),
                None if reason is None else self.rejections.labels(source=source, reason=reason),
            )
        requests, rejections = children
        requests.inc()
        if rejections is not None:
            rejections.inc()

    def observe_write(self, source: str, seconds: float) -> None:
        """Time one write of ``source``'s events to the inbox."""
        timed = self._timed.get(source)
        if timed is None:
            timed = self._timed[source] = self.write_seconds.labels(source=source)
        timed.observe(seconds)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type, for a ``/metrics`` endpoint."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
