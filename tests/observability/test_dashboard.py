"""The Grafana dashboard and the Prometheus alert rules in config/ read only series the code
exports, with labels those series carry (no promtool here: the files are parsed)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import Counter, Gauge, Histogram

from inbox import InboxWriter, ReceiverMetrics
from processors import WorkerMetrics

CONFIG = Path(__file__).resolve().parents[2] / "config"
DASHBOARD = CONFIG / "grafana-dashboard.json"
ALERTS = CONFIG / "prometheus-alerts.yml"

METRIC = re.compile(r"\b(inbox_[a-z0-9_]+)\b(?:\s*\{([^}]*)\})?")
MATCHER = re.compile(r"(\w+)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
# Labels every scraped series gets from Prometheus itself, and the histogram's bucket bound.
TARGET_LABELS = {"instance", "job", "le"}


def _series(kind: str, name: str) -> list[str]:
    if kind == "counter":
        return [f"{name}_total", f"{name}_created"]
    if kind == "histogram":
        return [f"{name}_bucket", f"{name}_count", f"{name}_sum", f"{name}_created"]
    return [name]


@pytest.fixture(scope="module")
def exported() -> dict[str, set[str]]:
    """Every series name the receiver and the worker export, with its label names."""
    found: dict[str, set[str]] = {}
    for owner in (ReceiverMetrics(), WorkerMetrics()):
        for metric in vars(owner).values():
            if isinstance(metric, Counter | Gauge | Histogram):
                # prometheus-client keeps a metric's base name and labels in these fields.
                kind, name, labels = metric._type, metric._name, metric._labelnames
                for series in _series(kind, name):
                    found[series] = set(labels)
    return found


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expressions.append(target["expr"])
    for variable in dashboard["templating"]["list"]:
        expressions.append(variable["definition"])
    return expressions


def _alert_expressions() -> list[str]:
    rules = yaml.safe_load(ALERTS.read_text())
    expressions = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "for", "labels", "annotations"} <= rule.keys(), rule
            assert rule["labels"]["severity"] in {"warning", "critical"}
            assert rule["annotations"]["summary"]
            expressions.append(rule["expr"])
    return expressions


def _check(expression: str, known: dict[str, set[str]]) -> list[str]:
    problems = []
    used: set[str] = set()
    for name, matchers in METRIC.findall(expression):
        if name not in known:
            problems.append(f"{name} is not exported")
            continue
        used |= known[name]
        for label in MATCHER.findall(matchers or ""):
            if label not in known[name] | TARGET_LABELS:
                problems.append(f"{name} has no label {label!r}")
    for grouping in GROUPING.findall(expression):
        for label in filter(None, (part.strip() for part in grouping.split(","))):
            if label not in used | TARGET_LABELS:
                problems.append(f"no series of {expression!r} has the label {label!r}")
    return problems


# What the issue asks each file to show, as fragments of its expressions.
NEEDED = {
    "dashboard": (
        'outcome="accepted"',
        'outcome="duplicate"',
        "inbox_receiver_rejections_total",
        "histogram_quantile(0.5, sum by (le, source) (rate(inbox_processing_lag_seconds",
        "histogram_quantile(0.99, sum by (le, source) (rate(inbox_processing_lag_seconds",
        'outcome=~"failed|dead|crashed"',
        'inbox_queue_events{state="dead"',
        "inbox_listener_up",
    ),
    "alerts": (
        'inbox_queue_events{state="dead"}',
        "inbox_processing_lag_seconds_bucket",
        "inbox_listener_up == 0",
        'inbox_receiver_requests_total{outcome="unavailable"}',
    ),
}


@pytest.mark.parametrize("which", ["dashboard", "alerts"])
def test_the_file_reads_only_exported_series(
    exported: dict[str, set[str]], db_url: str, which: str
) -> None:
    known = {**exported, **_queue_families(db_url)}
    expressions = _dashboard_expressions() if which == "dashboard" else _alert_expressions()
    assert len(expressions) >= (20 if which == "dashboard" else 6)
    problems = [p for e in expressions for p in _check(e, known)]
    assert not problems, problems
    text = "\n".join(expressions)
    missing = [fragment for fragment in NEEDED[which] if fragment not in text]
    assert not missing, missing


def test_the_check_catches_a_name_or_a_label_the_code_does_not_export(
    exported: dict[str, set[str]],
) -> None:
    assert _check("rate(inbox_receiver_requests[5m])", exported) == [
        "inbox_receiver_requests is not exported"
    ]
    assert _check('inbox_attempts_total{state="x"}', exported) == [
        "inbox_attempts_total has no label 'state'"
    ]
    assert _check("sum by (state) (inbox_batches_total)", exported)


def _queue_families(db_url: str) -> dict[str, set[str]]:
    """The queue gauges, as a worker collects them from a database with work in it."""
    with InboxWriter(db_url) as writer:
        writer.write("shop", "k1", b"{}")
    metrics = WorkerMetrics()
    metrics.watch_queue(db_url)
    found: dict[str, set[str]] = {}
    families: Any = metrics.registry.collect()
    for family in families:
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    assert {"inbox_queue_events", "inbox_queue_oldest_pending_seconds"} <= found.keys()
    return found
