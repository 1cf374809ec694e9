"""Prometheus metrics of a worker process (one registry per worker, so tests do not collide)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["WorkerMetrics"]


@dataclass
class WorkerMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.listener_up = Gauge(
            "inbox_listener_up", "1 while the LISTEN connection is healthy", registry=r
        )
        self.listener_reconnects = Counter(
            "inbox_listener_reconnects", "LISTEN connections lost and re-made", registry=r
        )
        self.listener_checks = Counter(
            "inbox_listener_health_checks", "successful listener health checks", registry=r
        )
        self.notifications = Counter(
            "inbox_notifications", "wake-up notifications received", registry=r
        )
        self.outcomes = Counter(
            "inbox_attempts", "settled attempts by outcome", ["outcome"], registry=r
        )
        self.batches = Counter("inbox_batches", "committed claim batches", registry=r)
        self.batch_seconds = Histogram(
            "inbox_batch_seconds", "claim-to-commit time of a batch", registry=r
        )
        self.reconnects = Counter(
            "inbox_worker_reconnects", "claim connections lost and re-made", registry=r
        )
