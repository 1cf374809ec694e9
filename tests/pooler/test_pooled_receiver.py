"""The receiver through PgBouncer in transaction mode, with the pooler's default settings.

The receiver's own tests run again here through the pooler (the ASGI app, and ``inbox
serve`` as a real process); beside them, a load of concurrent deliveries through ``inbox
serve``, the write's timeout, nothing of a transaction's settings left to the pool's next
client, and what a receiver not told of the pooler answers: 503 with the cause and the
setting to change, never a 500.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from starlette.testclient import TestClient

from inbox import Settings, create_app
from inbox._receiving.samples import SampleRequest
from tests._commands import start_serve
from tests._pgbouncer import SESSION_SETTINGS, PgBouncer, current_settings, running_pgbouncer
from tests._wait import wait_for
from tests.receiver.conftest import RsaPair, count_events, event_rows, signed
from tests.receiver.test_receiver_asgi import (  # noqa: F401 (collected here again)
    test_a_repeated_delivery_is_a_duplicate_with_the_same_event_id,
    test_a_signed_webhook_is_stored_then_acknowledged,
    test_accepted_events_are_logged_with_source_and_event_id,
    test_alipay_gets_the_text_success,
    test_each_provider_key_and_type_reach_the_log,
    test_healthz_checks_the_database,
    test_metrics_count_requests_by_source_and_outcome,
)
from tests.receiver.test_receiver_cli import (  # noqa: F401 (collected here again)
    test_send_signs_posts_and_prints_the_event_id,
    test_send_works_for_every_configured_scheme,
    wait_until_healthy,
    write_config,
)

Make = Callable[..., Settings]
Served = tuple[Path, int, "subprocess.Popen[str]"]

DELIVERIES = 240
CONCURRENCY = 16


def post_all(requests: Sequence[SampleRequest]) -> list[httpx.Response]:
    """Post every signed request to its URL, ``CONCURRENCY`` at a time (on one client: a
    client each would cost more than the receiver)."""
    limits = httpx.Limits(max_connections=CONCURRENCY)
    with httpx.Client(limits=limits, timeout=30) as client, ThreadPoolExecutor(CONCURRENCY) as pool:
        return list(
            pool.map(
                lambda r: client.post(r.url, content=r.body, headers=r.headers),
                requests,
            )
        )


def test_serve_answers_concurrent_deliveries_through_the_pooler_and_stores_each_once(
    served: Served,
    make_settings: Make,
    receiver_url: str,
    db_url: str,
    pgbouncer: PgBouncer,
) -> None:
    _config, port, process = served
    settings = make_settings(receiver_url)
    url = f"http://127.0.0.1:{port}/webhooks/{{source}}"
    requests = [signed(settings, "sw", url=url) for _ in range(DELIVERIES)]

    first = post_all(requests)
    assert sorted({r.status_code for r in first}) == [200], [r.text for r in first][:5]
    assert {r.json()["status"] for r in first} == {"accepted"}
    again = post_all(requests)
    assert [r.json() for r in again] == [
        {"status": "duplicate", "event_id": r.json()["event_id"]} for r in first
    ]
    stored = event_rows(db_url)
    assert len(stored) == DELIVERIES
    assert sorted(row[2] for row in stored) == sorted(request.key for request in requests)
    # The receiver's clients took turns on the pool's few server connections.
    clients, servers = pgbouncer.connections_of(receiver_url)
    assert servers <= pgbouncer.pool_size < clients
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_the_receivers_settings_stay_in_its_transactions(
    make_settings: Make, receiver_url: str, pgbouncer: PgBouncer
) -> None:
    with psycopg.connect(receiver_url, prepare_threshold=None) as conn:
        defaults = current_settings(conn, SESSION_SETTINGS)
    settings = make_settings(receiver_url, write_timeout_seconds=1.5)
    with TestClient(create_app(settings)) as client:
        for source in ("sw", "stripe", "github") * 4:
            request = signed(settings, source)
            reply = client.post(
                f"/webhooks/{source}", content=request.body, headers=request.headers
            )
            assert reply.status_code == 200, reply.text
    # The app has stopped: its connections are closed, their server connections back in
    # the pool for the next client, as they were after the receiver's last transaction.
    assert pgbouncer.settings_left(receiver_url, defaults) == []


# -- a receiver not told of the pooler: 503, the cause, and the setting that fixes it --------


def names_the_pooler_setting(line: dict[str, Any]) -> bool:
    """Whether a log line's advice (anything but its error text) names the pooler setting."""
    return any("pooler" in str(v) for k, v in line.items() if k not in ("error", "event"))


def test_serve_not_told_of_the_pooler_answers_503_and_names_the_setting(
    tmp_path: Path,
    receiver_url: str,
    unused_tcp_port: int,
    rsa_pair: RsaPair,
    make_settings: Make,
    monkeypatch: pytest.MonkeyPatch,
    db_url: str,
) -> None:
    monkeypatch.setenv("INBOX_DATABASE__POOLER", "none")
    config = write_config(tmp_path / "inbox.toml", receiver_url, unused_tcp_port, rsa_pair)
    process = start_serve(config)
    base = f"http://127.0.0.1:{unused_tcp_port}"
    try:

        def answers() -> bool:
            assert process.poll() is None, process.communicate()[1]
            try:
                return httpx.get(base + "/healthz", timeout=5).status_code == 503
            except httpx.TransportError:
                return False

        wait_for(answers, timeout=60, what="the receiver to answer its health check 503")
        settings = make_settings(receiver_url)
        request = signed(settings, "sw", url=base + "/webhooks/{source}")
        reply = httpx.post(request.url, content=request.body, headers=request.headers, timeout=30)
        assert reply.status_code == 503, reply.text
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    assert "Traceback" not in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    failures = [line for line in lines if line.get("level") in ("error", "warning")]
    told = [line for line in failures if names_the_pooler_setting(line)]
    assert told, "no warning or error names the pooler setting:\n" + err
    assert all(line.get("error") for line in told), told  # the real cause, never null
    assert count_events(db_url) == 0


@pytest.fixture(scope="module")
def relaxed_pgbouncer(pg_server: str) -> Iterator[PgBouncer]:
    """A PgBouncer that lets the startup ``options`` through (a common workaround), so a
    receiver not told of the pooler connects, then prepares statements it cannot keep."""
    with running_pgbouncer(pg_server, settings={"ignore_startup_parameters": "options"}) as b:
        yield b


def test_prepared_statements_lost_in_the_pool_are_503_never_500(
    tmp_path: Path,
    db_url: str,
    unused_tcp_port: int,
    rsa_pair: RsaPair,
    make_settings: Make,
    relaxed_pgbouncer: PgBouncer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INBOX_DATABASE__POOLER", "none")
    url = relaxed_pgbouncer.pooled(db_url)
    process = start_serve(write_config(tmp_path / "inbox.toml", url, unused_tcp_port, rsa_pair))
    base = f"http://127.0.0.1:{unused_tcp_port}"
    try:
        wait_until_healthy(base + "/healthz", process)
        settings = make_settings(url)
        # Whether a statement is lost depends on which server connection PgBouncer lends
        # each transaction: more rounds until one is (or the test says it did not test).
        replies: list[httpx.Response] = []
        for _ in range(5):
            replies += post_all(
                [signed(settings, "sw", url=base + "/webhooks/{source}") for _ in range(DELIVERIES)]
            )
            if any(r.status_code == 503 for r in replies):
                break
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    statuses = [r.status_code for r in replies]
    assert set(statuses) <= {200, 503}, f"{sorted(set(statuses))}:\n{err[-3000:]}"
    assert 503 in statuses, "no prepared statement was lost: the test did not test"
    assert "Traceback" not in err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    failed = [line for line in lines if line.get("level") in ("error", "warning")]
    assert any(names_the_pooler_setting(line) for line in failed), failed[:3]
    # Each acknowledged delivery is stored (a 503 may be too: the provider's retry of it is
    # then a duplicate).
    assert count_events(db_url) >= statuses.count(200)
