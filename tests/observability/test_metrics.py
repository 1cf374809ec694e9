"""``/metrics`` scraped over HTTP from a real receiver and a real ``inbox worker`` process:
the series the dashboard and the alerts read are there, with the values the traffic made."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from inbox import Settings
from inbox.testing import signed_request
from tests._wait import scalar, wait_for
from tests.observability._receiver import serving

REPO = Path(__file__).resolve().parents[2]
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
WORKER = [sys.executable, "-m", "inbox", "worker", "--app", "tests.observability.worker_app:router"]

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    response = httpx.get(url, timeout=5)
    response.raise_for_status()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def worker_process(db_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen(
        [*WORKER, "--metrics-port", str(port)],
        cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("INBOX_")},
            "INBOX_DATABASE__URL": db_url,
            "INBOX_WORKER__MAX_ATTEMPTS": "1",
            "INBOX_WORKER__POLL_INTERVAL_SECONDS": "0.5",
        },
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process, port
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def test_the_receiver_and_the_worker_export_the_new_series(
    db_url: str,
    unused_tcp_port: int,
    worker_process: tuple[subprocess.Popen[bytes], int],
    tmp_path: Path,
) -> None:
    settings = Settings(
        database={"url": db_url},
        sources=[{"name": "sw", "verifier": "standard-webhooks", "secrets": [SECRET]}],
    )
    with serving(settings, db_url, unused_tcp_port) as base:
        for event_type in ("invoice.paid", "fail"):
            request = signed_request(settings, "sw", event_type=event_type)
            for _ in range(2):  # the second delivery is a duplicate
                response = httpx.post(
                    f"{base}{request.path}", content=request.body, headers=request.headers
                )
                assert response.status_code == 200
        assert httpx.post(f"{base}/webhooks/sw", content=b"{}").status_code == 401
        receiver = scrape(f"{base}/metrics")

    requests = "inbox_receiver_requests_total"
    assert value(receiver, requests, source="sw", outcome="accepted") == 2
    assert value(receiver, requests, source="sw", outcome="duplicate") == 2
    assert value(receiver, requests, source="sw", outcome="unauthorized") == 1
    assert value(receiver, "inbox_receiver_write_seconds_count", source="sw") == 4
    rejections = [k for k in receiver if k[0] == "inbox_receiver_rejections_total"]
    assert rejections, receiver

    process, port = worker_process
    wait_for(
        lambda: scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 0,
        timeout=60,
        what="the worker to settle both events",
    )
    worker_url = f"http://127.0.0.1:{port}/metrics"
    samples: Samples = {}

    def settled_in_metrics() -> bool:
        nonlocal samples
        assert process.poll() is None, (tmp_path / "worker.log").read_text()
        samples = scrape(worker_url)
        # The queue gauges are read at most every few seconds: wait for a fresh read.
        return (
            value(samples, "inbox_queue_events", source="sw", state="dead") == 1
            and (value(samples, "inbox_processing_lag_seconds_count", source="sw") or 0) == 2
        )

    wait_for(settled_in_metrics, timeout=60, what="the worker's metrics to show both events")
    assert value(samples, "inbox_listener_up") == 1
    assert value(samples, "inbox_queue_read_success") == 1
    assert value(samples, "inbox_queue_events", source="sw", state="pending") == 0
    assert value(samples, "inbox_queue_events", source="sw", state="retrying") == 0
    assert value(samples, "inbox_queue_oldest_pending_seconds", source="sw") == 0
    assert value(samples, "inbox_attempts_total", source="sw", outcome="processed") == 1
    assert value(samples, "inbox_attempts_total", source="sw", outcome="dead") == 1
    batches = value(samples, "inbox_batches_total") or 0
    assert batches >= 1
    assert value(samples, "inbox_batch_size_count") == batches
    assert value(samples, "inbox_batch_size_sum") == 2
    # Both waited for a worker that had not started yet: more than nothing, less than a minute.
    lag_sum = value(samples, "inbox_processing_lag_seconds_sum", source="sw") or 0
    assert 0 < lag_sum < 120
    assert value(samples, "inbox_listener_notifications_total") is not None
