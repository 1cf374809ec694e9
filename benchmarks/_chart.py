"""The chart of ``python -m benchmarks all``: one PNG, four panels of side-by-side bars.

(a) library ingest, writers vs pgbench, by concurrency; (b) HTTP ingest, `inbox serve` vs the
no-op endpoint, plus the duplicate storm; (c) processing throughput per system, by worker
processes; (d) wake latency p50 and p99 per system. matplotlib comes with the ``bench``
extra (``pip install -e '.[dev,bench]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import receiver_load
from benchmarks._report import AllResults
from benchmarks.ingest import PGBENCH

INGEST_SERIES = (
    (PGBENCH, "", "pgbench (ceiling)"),
    ("async", "after_commit", "AsyncInboxWriter"),
    ("sync", "after_commit", "InboxWriter (threads)"),
    ("async", "in_transaction", "AsyncInboxWriter, NOTIFY in tx"),
    ("sync", "in_transaction", "InboxWriter, NOTIFY in tx"),
)


def _bars(
    ax: Any,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    fmt: str = "{:,.0f}",
) -> None:
    """Grouped bars: one group per x label, one bar per series, each bar labelled."""
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v or 0.0 for v in values]
        bars = ax.bar(xs, heights, width, label=name)
        labels = [fmt.format(v) if v else "" for v in values]
        ax.bar_label(bars, labels=labels, fontsize=6, rotation=90, padding=2)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    # Head room above the tallest bar for its label and for the legend.
    tallest = max((v or 0.0 for _, values in series for v in values), default=0.0)
    if tallest:
        ax.set_ylim(0, tallest * (1.2 + 0.08 * len(series)))
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _ingest(ax: Any, r: AllResults) -> None:
    res = r.ingest
    if res is None:
        ax.set_axis_off()
        return
    writers = sorted({c.writers for c in res.configs})
    series = [
        (label, [res.median_of(kind, mode, w) for w in writers])
        for kind, mode, label in INGEST_SERIES
        if any(res.median_of(kind, mode, w) for w in writers)
    ]
    _bars(ax, [f"{w} writer{'s' if w > 1 else ''}" for w in writers], series)
    ax.set_title("(a) Library ingest: new events/s", fontsize=10)
    ax.set_ylabel("writes/s (median)")
    ax.legend(fontsize=7, loc="upper left", ncols=2)


def _http(ax: Any, r: AllResults) -> None:
    res = r.http
    if res is None and r.storm is None:
        ax.set_axis_off()
        return
    groups: list[str] = []
    serve: list[float | None] = []
    peer: list[float | None] = []
    noop: list[float | None] = []
    for c in sorted({c.concurrency for c in res.cells} if res else set()):
        groups.append(f"{c} connections")
        by_target = {x.target: x.rps for x in res.cells if x.concurrency == c} if res else {}
        serve.append(by_target.get(receiver_load.INBOX_TARGET))
        peer.append(by_target.get(receiver_load.PEER_TARGET))
        noop.append(by_target.get(receiver_load.NOOP_TARGET))
    if r.storm is not None and r.storm.runs:
        once = "exactly once" if r.storm.exactly_once else "NOT exactly once"
        groups.append(f"storm, {r.storm.concurrency} conn.\n({once})")
        serve.append(r.storm.rps)
        peer.append(None)
        noop.append(None)
    _bars(
        ax,
        groups,
        [
            ("inbox serve", serve),
            ("hand-written receiver", peer),
            ("no-op endpoint (driver's ceiling)", noop),
        ],
    )
    ax.set_title("(b) HTTP ingest: signed requests/s", fontsize=10)
    ax.set_ylabel("requests/s (median)")
    ax.legend(fontsize=7, loc="upper right")


def _throughput(ax: Any, r: AllResults) -> None:
    if not r.throughput:
        ax.set_axis_off()
        return
    procs = sorted({c.processes for c in r.throughput})
    systems = list(dict.fromkeys(c.system for c in r.throughput))
    series = []
    for s in systems:
        rates = {c.processes: c.median_rate() for c in r.throughput if c.system == s}
        series.append((s.short_label, [rates.get(p) for p in procs]))
    _bars(ax, [f"{p} worker process{'es' if p > 1 else ''}" for p in procs], series)
    ax.set_title(f"(c) Draining a {r.throughput_backlog:,}-event backlog", fontsize=10)
    ax.set_ylabel("events/s (median)")
    ax.legend(fontsize=7, loc="upper left", ncols=2)


def _latency(ax: Any, r: AllResults) -> None:
    if not r.latency:
        ax.set_axis_off()
        return
    labels = [c.system.short_label.replace(" ", "\n", 1) for c in r.latency]
    series = [
        ("p50", [c.percentile(50) for c in r.latency]),
        ("p99", [c.percentile(99) for c in r.latency]),
    ]
    _bars(ax, labels, series, fmt="{:.1f}")
    values = [v for _, vs in series for v in vs if v and v > 0]
    if values and max(values) / min(values) > 20:
        # One system's tail would flatten every other bar.
        ax.set_yscale("log")
        ax.set_ylim(min(values) / 2, max(values) * 4)
    ax.set_title("(d) Wake latency at idle: commit → handler start", fontsize=10)
    ax.set_ylabel("ms (median of runs)")
    ax.legend(fontsize=7, loc="upper left", ncols=2)


def write_chart(r: AllResults, path: Path, subtitle: str) -> bool:
    """Draw the chart to ``path``; False (and a note) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # a file, never a window
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"no chart: matplotlib is missing (pip install -e '.[dev,bench]'); not {path}")
        return False
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))
    _ingest(axes[0][0], r)
    _http(axes[0][1], r)
    _throughput(axes[1][0], r)
    _latency(axes[1][1], r)
    fig.suptitle(f"pg-inbox benchmarks — {subtitle}", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
