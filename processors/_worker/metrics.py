"""Prometheus metrics of a worker process (one registry per worker, so tests do not collide).

Names follow Prometheus' conventions: an ``inbox_`` prefix, base units (seconds) named in
the suffix, ``_total`` on counters (the client adds it to a Counter's name), and labels with
bounded values only (an outcome, a configured source). docs/observability.md lists them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

if TYPE_CHECKING:
    from processors._model.claimed import ClaimedEvent
    from processors._model.decide import Decision

__all__ = ["WorkerMetrics"]

# From a woken worker's few milliseconds to a backlog drained over an hour.
_LAG_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
)  # fmt: skip
# A batch holds at most 256 events (worker.MAX_BATCH; 64 with savepoints = "event").
_BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass
class WorkerMetrics:
    """The worker's Prometheus metrics (docs/observability.md), in ``registry``: batches,
    attempts by source and outcome, processing lag, the listener and reconnects."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.listener_up = Gauge(
            "inbox_listener_up", "1 while the LISTEN connection is up and healthy", registry=r
        )
        self.listener_reconnects = Counter(
            "inbox_listener_reconnects", "LISTEN connections lost and re-made", registry=r
        )
        self.listener_checks = Counter(
            "inbox_listener_health_checks", "successful listener health checks", registry=r
        )
        self.notifications = Counter(
            "inbox_listener_notifications", "wake-up notifications received", registry=r
        )
        self.outcomes = Counter(
            "inbox_attempts",
            "settled attempts by event source and outcome",
            ["source", "outcome"],
            registry=r,
        )
        # Labelled children by (source, outcome), kept for the worker's life: a batch then
        # looks up each pair it settled in a dict, not in the client's locked label map.
        # Bounded as the label values are: configured sources times the fixed outcomes.
        self._outcome_of: dict[tuple[str, str], Counter] = {}
        self.batches = Counter("inbox_batches", "committed claim batches", registry=r)
        self.batch_seconds = Histogram(
            "inbox_batch_seconds", "claim-to-commit time of a batch", registry=r
        )
        self.batch_size = Histogram(
            "inbox_batch_size",
            "events per committed claim batch",
            buckets=_BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self.lag_seconds = Histogram(
            "inbox_processing_lag_seconds",
            "from an event's receipt to the start of its first handler run (replays excluded)",
            ["source"],
            buckets=_LAG_BUCKETS,
            registry=r,
        )
        self.reconnects = Counter(
            "inbox_worker_reconnects", "claim connections lost and re-made", registry=r
        )

    def watch_queue(self, dsn: str, *, worker: str = "") -> None:
        """Also export the queue's gauges (``inbox_queue_*``), read from ``dsn`` when the
        registry is collected (a scrape), at most every few seconds. ``inbox worker
        --metrics-port`` does this; a host that serves the registry itself calls it."""
        from processors._worker.queue_gauges import QueueGauges

        self.registry.register(QueueGauges(dsn, worker=worker))

    def observe_batch(
        self, batch: Sequence[ClaimedEvent], decisions: Sequence[Decision], seconds: float
    ) -> None:
        """Count a committed batch: its time and size, each (source, outcome), and the lag
        of each event whose first handler run it was. ``batch`` is every event the batch
        claimed, those it released unrun included (each has a decision)."""
        self.batches.inc()
        self.batch_seconds.observe(seconds)
        self.batch_size.observe(len(batch))
        events = {item.event.id: item.event for item in batch}
        lag_of: dict[str, Histogram] = {}  # a labelled child is looked up once a batch
        settled: dict[tuple[str, str], int] = {}
        for decision in decisions:
            event = events[decision.event_id]
            pair = (event.source, decision.outcome)
            settled[pair] = settled.get(pair, 0) + 1
            # A retry's lag would be its backoff, a replay's the age of the event: the
            # histogram is how long new events wait for a handler (the worker's clock
            # against the server's received_at; hosts keep their clocks in sync).
            if decision.handler is not None and event.attempt == 1 and not event.is_replay:
                lag = (decision.started_at - event.received_at).total_seconds()
                child = lag_of.get(event.source)
                if child is None:
                    child = lag_of[event.source] = self.lag_seconds.labels(event.source)
                child.observe(max(lag, 0.0))
        for labels, count in settled.items():
            counter = self._outcome_of.get(labels)
            if counter is None:
                counter = self._outcome_of[labels] = self.outcomes.labels(*labels)
            counter.inc(count)
