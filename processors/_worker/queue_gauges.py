"""The queue's gauges: work by source and state, read from the database when scraped.

A collector rather than numbers the worker keeps: no worker sees the whole queue (others
claim, the receiver enqueues, operators replay), and the table is the truth. The query reads
the small work table (``queue_gauges`` in processors/sql/queries.sql), with the worker's own
role (it may read inbox_work and inbox_events), on a short-lived connection bounded by a
statement timeout. Its time grows with the work table (benchmarks/ANALYSIS.md, "What
observability costs"), so results are kept for ``min_interval_seconds``, and several
scrapers cost one query per interval. Every worker
process exports the same numbers: aggregate them with ``max by (source, state)``, never
``sum``. (``python -m benchmarks observability`` measures the query.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, LiteralString

import psycopg
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from inbox._core.database.outage import Outage
from inbox._core.database.pooler import settings_statement
from inbox._core.logs import get_logger
from inbox._core.sql import load_queries

__all__ = ["QueueGauges"]

log = get_logger("processors.metrics")

QUERIES = load_queries("processors.sql", "queries.sql")
QUEUE_GAUGES: LiteralString = QUERIES["queue_gauges"]
LOG_GAUGES: LiteralString = QUERIES["log_gauges"]
STATES = ("pending", "retrying", "dead")

Row = tuple[str, int, int, int, float]
# (partitions, the oldest one's start in epoch seconds or None, whether the first one is the
# table from before partitions, the key table's bytes)
LogRow = tuple[int, float | None, bool, int]


class QueueGauges(Collector):
    def __init__(
        self,
        dsn: str,
        *,
        worker: str = "",
        min_interval_seconds: float = 10.0,
        timeout_seconds: float = 5.0,
    ) -> None:
        self._dsn = dsn
        self._label = f"pg-inbox metrics {worker}".rstrip()
        self._min_interval = min_interval_seconds
        self._timeout = timeout_seconds
        self._lock = threading.Lock()
        self._read_at = -float("inf")
        self._rows: list[Row] | None = None
        self._log: LogRow | None = None
        self._outage = Outage()

    def collect(self) -> Iterator[Any]:
        rows = self._current()
        ok = GaugeMetricFamily(
            "inbox_queue_read_success",
            "1 when the queue gauges were read from the database, 0 when the read failed",
        )
        ok.add_metric([], 0.0 if rows is None else 1.0)
        yield ok
        if rows is None:
            return  # no numbers rather than stale ones
        events = GaugeMetricFamily(
            "inbox_queue_events",
            "events in the work queue by source and state (pending, retrying, dead)",
            labels=["source", "state"],
        )
        oldest = GaugeMetricFamily(
            "inbox_queue_oldest_pending_seconds",
            "how long the oldest due live event of a source has waited (0: none waits)",
            labels=["source"],
        )
        for source, *counts, oldest_seconds in rows:
            for state, count in zip(STATES, counts, strict=True):
                events.add_metric([source, state], float(count))
            oldest.add_metric([source], float(oldest_seconds))
        yield events
        yield oldest
        yield from self._log_families()

    def _log_families(self) -> Iterator[Any]:
        if self._log is None:
            return
        partitions, oldest_start, legacy, key_bytes = self._log
        yield GaugeMetricFamily(
            "inbox_log_partitions",
            "partitions of the log (each a period of inbox_events, its attempts and deliveries)",
            value=float(partitions),
        )
        if oldest_start is not None and not legacy:
            yield GaugeMetricFamily(
                "inbox_log_oldest_partition_start_seconds",
                "where the oldest partition of the log begins (Unix time): what a prune keeps",
                value=oldest_start,
            )
        yield GaugeMetricFamily(
            "inbox_keys_bytes",
            "size of the key table (one row per key ever received: dedupe is permanent)",
            value=float(key_bytes),
        )

    def _current(self) -> list[Row] | None:
        with self._lock:
            now = time.monotonic()
            if now - self._read_at >= self._min_interval:
                self._rows, self._log = self._read()
                self._read_at = now
            return self._rows

    def _read(self) -> tuple[list[Row] | None, LogRow | None]:
        try:
            with (
                psycopg.connect(
                    self._dsn,
                    application_name=self._label,
                    connect_timeout=max(1, round(self._timeout)),
                    autocommit=True,
                ) as conn,
                conn.transaction(),
            ):
                # For the transaction only: a pooler's server session is shared.
                timeout = {"statement_timeout": str(int(self._timeout * 1000))}
                conn.execute(settings_statement(timeout, local=True))
                rows = conn.execute(QUEUE_GAUGES).fetchall()
                log_row = conn.execute(LOG_GAUGES).fetchone()
        except (psycopg.Error, OSError) as exc:
            if self._outage.failed(time.monotonic()):
                log.warning("queue_gauges_unavailable", error=f"{type(exc).__name__}: {exc}")
            return None, None
        self._outage.recovered(time.monotonic())
        queue = [(str(r[0]), int(r[1]), int(r[2]), int(r[3]), float(r[4])) for r in rows]
        if log_row is None:
            return queue, None
        partitions, oldest, legacy, key_bytes = log_row
        return queue, (int(partitions), oldest, bool(legacy), int(key_bytes))
