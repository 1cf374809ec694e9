"""The ASGI receiver end to end: Starlette's test client against a real PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from inbox import Settings, create_app
from tests._wait import wait_for
from tests.receiver.conftest import count_events, event_rows, signed

Make = Callable[..., Settings]


@pytest.fixture
def settings(make_settings: Make, receiver_url: str) -> Settings:
    return make_settings(receiver_url)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        yield client


def post(client: TestClient, settings: Settings, source: str, **kwargs: Any) -> httpx.Response:
    request = signed(settings, source, **kwargs)
    return client.post(f"/webhooks/{source}", content=request.body, headers=request.headers)


def test_a_signed_webhook_is_stored_then_acknowledged(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    request = signed(settings, "sw", event_type="invoice.paid")
    headers = {**request.headers, "Authorization": "Bearer x", "X-Custom": "kept"}
    response = client.post("/webhooks/sw", content=request.body, headers=headers)

    assert response.status_code == 200
    reply = response.json()
    assert reply["status"] == "accepted"
    assert response.headers["inbox-event-id"] == str(reply["event_id"])
    [(event_id, source, key, event_type, verifier, stored, body)] = event_rows(db_url)
    assert (event_id, source, key) == (reply["event_id"], "sw", request.headers["webhook-id"])
    assert (event_type, verifier) == ("invoice.paid", "standard-webhooks")
    assert bytes(body) == request.body
    assert stored["x-custom"] == "kept"
    assert "authorization" not in stored
    assert all(name == name.lower() for name in stored)


def test_a_repeated_delivery_is_a_duplicate_with_the_same_event_id(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    request = signed(settings, "stripe")
    first = client.post("/webhooks/stripe", content=request.body, headers=request.headers)
    again = client.post("/webhooks/stripe", content=request.body, headers=request.headers)
    assert first.json()["status"] == "accepted"
    assert again.status_code == 200
    assert again.json() == {"status": "duplicate", "event_id": first.json()["event_id"]}
    assert count_events(db_url) == 1
    assert event_rows(db_url)[0][2] == json.loads(request.body)["id"]


def test_each_provider_key_and_type_reach_the_log(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    for source in ("github", "slack", "wechatpay"):
        assert post(client, settings, source).status_code == 200, source
    rows = {row[1]: row for row in event_rows(db_url)}
    assert rows["github"][3] == "ping"
    assert rows["slack"][3] == "app_mention"
    assert rows["wechatpay"][3] == "TRANSACTION.SUCCESS"


def test_alipay_gets_the_text_success(client: TestClient, settings: Settings, db_url: str) -> None:
    response = post(client, settings, "alipay")
    assert response.status_code == 200
    assert response.text == "success"
    assert response.headers["content-type"].startswith("text/plain")
    [row] = event_rows(db_url)
    assert row[3] == "trade_status_sync"
    assert response.headers["inbox-event-id"] == str(row[0])


def test_slack_url_verification_echoes_the_challenge_and_stores_nothing(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    body = json.dumps({"token": "t", "challenge": "c-123", "type": "url_verification"}).encode()
    response = post(client, settings, "slack", body=body)
    assert response.status_code == 200
    assert response.json() == {"challenge": "c-123"}
    assert count_events(db_url) == 0


def test_an_unknown_source_is_404(client: TestClient, db_url: str) -> None:
    response = client.post("/webhooks/nope", content=b"{}")
    assert response.status_code == 404
    assert response.json() == {"error": "not_found"}
    assert count_events(db_url) == 0


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda h: {k: v for k, v in h.items() if k != "webhook-signature"}, "missing_header"),
        (lambda h: {**h, "webhook-signature": "v1,@@not-base64@@"}, "bad_signature"),
        (lambda h: {**h, "webhook-signature": "v1,AAAA"}, "bad_signature"),
        (lambda h: {**h, "webhook-signature": "v9,AAAA"}, "no_supported_signature"),
        (lambda h: {**h, "webhook-timestamp": "soon"}, "malformed_header"),
    ],
)
def test_a_missing_or_garbled_signature_is_401_and_stores_nothing(
    client: TestClient,
    settings: Settings,
    db_url: str,
    tamper: Callable[[dict[str, str]], dict[str, str]],
    reason: str,
) -> None:
    request = signed(settings, "sw")
    with capture_logs() as logs:
        response = client.post(
            "/webhooks/sw", content=request.body, headers=tamper(request.headers)
        )
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized"}  # the reason is never echoed
    assert count_events(db_url) == 0
    [rejected] = [e for e in logs if e["event"] == "webhook_rejected"]
    assert (rejected["source"], rejected["reason"], rejected["status"]) == ("sw", reason, 401)


@pytest.mark.parametrize(
    ("offset", "reason"), [(-600, "timestamp_too_old"), (600, "timestamp_in_future")]
)
def test_a_stale_or_future_timestamp_is_401(
    client: TestClient, settings: Settings, db_url: str, offset: int, reason: str
) -> None:
    response = post(client, settings, "stripe", now=time.time() + offset)
    assert response.status_code == 401
    assert count_events(db_url) == 0
    metrics = client.get("/metrics").text
    assert f'inbox_receiver_rejections_total{{reason="{reason}",source="stripe"}} 1.0' in metrics


def test_a_tampered_body_is_401(client: TestClient, settings: Settings, db_url: str) -> None:
    request = signed(settings, "github")
    tampered = request.body.replace(b"Design", b"design")
    response = client.post("/webhooks/github", content=tampered, headers=request.headers)
    assert response.status_code == 401
    assert count_events(db_url) == 0


def test_no_obtainable_key_is_400(client: TestClient, settings: Settings, db_url: str) -> None:
    response = post(client, settings, "stripe", body=b'{"object": "event", "type": "x"}')
    assert response.status_code == 400
    reply = response.json()
    assert reply["error"] == "no_idempotency_key"
    assert "json:/id" in reply["detail"]  # where Stripe's key is looked for
    assert "key_from" in reply["detail"]
    assert count_events(db_url) == 0


def test_a_body_that_is_not_json_is_400_saying_so_where_the_key_is_in_json(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    response = post(client, settings, "stripe", body=b"garbage, not an event")
    assert response.status_code == 400
    reply = response.json()
    assert reply["error"] == "no_idempotency_key"
    assert "(looked at json:/id; the body is not JSON)" in reply["detail"]
    assert count_events(db_url) == 0


def test_a_standard_webhooks_body_that_is_not_json_is_stored_without_a_type(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    # The key is a header, so the event is whole; the type, read from the JSON body, is a
    # convenience: losing a verified event over it would be worse (docs/operations.md).
    request = signed(settings, "sw", body=b"garbage, not an event")
    response = client.post("/webhooks/sw", content=request.body, headers=request.headers)
    assert response.status_code == 200, response.text
    [(event_id, source, key, event_type, *_)] = event_rows(db_url)
    assert (event_id, source, key) == (
        response.json()["event_id"],
        "sw",
        request.headers["webhook-id"],
    )
    assert event_type is None


def test_an_announced_oversize_body_is_413_before_it_is_read(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    request = signed(settings, "small", body=b"x" * 65)
    response = client.post("/webhooks/small", content=request.body, headers=request.headers)
    assert response.status_code == 413
    assert response.json() == {"error": "too_large", "limit_bytes": 64}
    assert count_events(db_url) == 0


def test_the_default_limit_is_one_mebibyte(client: TestClient, settings: Settings) -> None:
    big = b"{" + b" " * (1024 * 1024) + b"}"
    response = post(client, settings, "sw", body=big)
    assert response.status_code == 413


def test_healthz_checks_the_database(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_is_503_without_the_schema(make_settings: Make, empty_db_url: str) -> None:
    with TestClient(create_app(make_settings(empty_db_url))) as client:
        response = client.get("/healthz")
        assert response.status_code == 503
        assert response.json()["detail"] == "MigrationError"
        # and a write against it is a 503 too, never a 500
        assert post(client, make_settings(empty_db_url), "sw").status_code == 503


def test_ready_once_the_pool_has_connected_and_always_live(
    make_settings: Make, receiver_url: str
) -> None:
    with TestClient(create_app(make_settings(receiver_url))) as client:
        # The pool connects at start-up, not at the first webhook.
        wait_for(lambda: client.get("/readyz").status_code == 200, timeout=30, what="ready")
        assert client.get("/readyz").json() == {"status": "ok"}
        assert client.get("/livez").json() == {"status": "ok"}


def test_not_ready_before_the_pool_connects_yet_live(
    make_settings: Make, unused_tcp_port: int
) -> None:
    down = f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres"
    with TestClient(create_app(make_settings(down, write_timeout_seconds=0.5))) as client:
        response = client.get("/readyz")
        assert (response.status_code, response.json()["status"]) == (503, "starting")
        assert client.get("/livez").status_code == 200
        assert client.get("/healthz").status_code == 503


def test_metrics_count_requests_by_source_and_outcome(
    client: TestClient, settings: Settings
) -> None:
    request = signed(settings, "sw")
    for _ in range(2):
        client.post("/webhooks/sw", content=request.body, headers=request.headers)
    client.post("/webhooks/unknown-1", content=b"")
    client.post("/webhooks/unknown-2", content=b"")
    text = client.get("/metrics").text
    assert 'inbox_receiver_requests_total{outcome="accepted",source="sw"} 1.0' in text
    assert 'inbox_receiver_requests_total{outcome="duplicate",source="sw"} 1.0' in text
    # every unknown source shares one label: a URL cannot grow the registry
    assert 'inbox_receiver_requests_total{outcome="not_found",source="(unknown)"} 2.0' in text
    assert 'inbox_receiver_write_seconds_count{source="sw"} 2.0' in text


def test_each_app_has_its_own_metrics(make_settings: Make, receiver_url: str) -> None:
    one, two = create_app(make_settings(receiver_url)), create_app(make_settings(receiver_url))
    with TestClient(one) as first, TestClient(two) as second:
        first.post("/webhooks/nope", content=b"")
        assert "not_found" in first.get("/metrics").text
        assert "not_found" not in second.get("/metrics").text


def test_a_none_source_logs_a_warning_at_start_up(make_settings: Make, receiver_url: str) -> None:
    with capture_logs() as logs:
        create_app(make_settings(receiver_url))
    [warning] = [e for e in logs if e["event"] == "unverified_source_configured"]
    assert (warning["source"], warning["log_level"]) == ("open", "warning")


def test_accepted_events_are_logged_with_source_and_event_id(
    client: TestClient, settings: Settings
) -> None:
    with capture_logs() as logs:
        reply = post(client, settings, "github").json()
    [accepted] = [e for e in logs if e["event"] == "webhook_accepted"]
    assert (accepted["source"], accepted["event_id"]) == ("github", reply["event_id"])


def test_get_on_the_webhook_route_is_405(client: TestClient, db_url: str) -> None:
    assert client.get("/webhooks/sw").status_code == 405
    assert count_events(db_url) == 0


# -- the database is down or slow: 503, bounded, never a 2xx --------------------------------


def test_a_database_that_is_down_gives_503_within_the_write_timeout(
    make_settings: Make, unused_tcp_port: int
) -> None:
    down = f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres"
    settings = make_settings(down, write_timeout_seconds=0.5)
    with TestClient(create_app(settings)) as client:
        request = signed(settings, "sw")
        started = time.monotonic()
        response = client.post("/webhooks/sw", content=request.body, headers=request.headers)
        elapsed = time.monotonic() - started
        assert response.status_code == 503
        assert response.headers["retry-after"] == "5"
        assert response.json()["error"] == "unavailable"
        assert elapsed < 10.0  # bounded: 0.5 s timeout, generous for a loaded machine
        assert client.get("/healthz").status_code == 503
        metrics = client.get("/metrics").text
        # the pool's wait and the write's deadline are the same bound; either may fire first
        assert 'reason="database_unavailable"' in metrics or 'reason="write_timeout"' in metrics


def test_a_database_that_hangs_gives_503_and_nothing_commits(
    make_settings: Make, db_url: str, receiver_url: str
) -> None:
    settings = make_settings(receiver_url, write_timeout_seconds=0.5)
    with (
        TestClient(create_app(settings)) as client,
        psycopg.connect(db_url) as blocker,
    ):
        assert client.get("/healthz").status_code == 200  # the pool is up
        blocker.execute("lock table inbox_events in access exclusive mode")
        request = signed(settings, "sw")
        started = time.monotonic()
        response = client.post("/webhooks/sw", content=request.body, headers=request.headers)
        elapsed = time.monotonic() - started
        blocker.rollback()
        assert response.status_code == 503
        assert elapsed < 10.0  # bounded: 0.5 s timeout, generous for a loaded machine
    assert count_events(db_url) == 0


@pytest.mark.parametrize(
    ("root_path", "path"),
    [
        ("", "/webhooks/sw"),
        ("", "/webhooks/"),
        ("", "/webhooks"),
        ("", "/webhooks/sw/extra"),
        ("", "/webhooks/sw/"),
        ("", "/healthz"),
        ("", "/other/webhooks/sw"),
        ("/inbox", "/inbox/webhooks/sw"),
        ("/inbox", "/inboxes/webhooks/sw"),
        ("/inbox", "/webhooks/sw"),  # a server that leaves root_path out of path
        ("/webhooks/sw", "/webhooks/sw"),
        ("/webhooks", "/webhooks/webhooks/sw"),
    ],
)
def test_the_short_way_to_the_webhook_route_matches_as_starlette_does(
    root_path: str, path: str
) -> None:
    from starlette.routing import Match, Route

    from inbox.contrib._asgi import _webhook_source

    scope = {"type": "http", "method": "POST", "path": path, "root_path": root_path}
    match, child = Route("/webhooks/{source}", _nothing, methods=["POST"]).matches(dict(scope))
    expected = child["path_params"]["source"] if match is Match.FULL else None
    assert _webhook_source(scope) == expected


def test_middleware_a_host_adds_sees_every_webhook(settings: Settings, db_url: str) -> None:
    from starlette.middleware.base import BaseHTTPMiddleware

    seen: list[str] = []

    async def record(request: Any, call_next: Any) -> Any:
        seen.append(request.url.path)
        return await call_next(request)

    app = create_app(settings)
    app.add_middleware(BaseHTTPMiddleware, dispatch=record)
    with TestClient(app) as client:
        assert post(client, settings, "sw").status_code == 200
    assert seen == ["/webhooks/sw"]
    assert count_events(db_url) == 1


def test_the_signed_url_follows_each_request(settings: Settings) -> None:
    from inbox.contrib._asgi import _WebhookEndpoint

    endpoint = _WebhookEndpoint(create_app(settings).state.receiver, None)  # type: ignore[arg-type]

    def url(host: str, query: bytes, server: Any = ("10.0.0.1", 8000)) -> str:
        scope = {"scheme": "https", "server": server, "path": "/webhooks/tw", "query_string": query}
        scope["headers"] = [(b"host", host.encode())]
        return endpoint._url(scope, {"host": host})

    assert url("a.example", b"") == "https://a.example/webhooks/tw"
    assert url("a.example", b"x=1") == "https://a.example/webhooks/tw?x=1"
    assert url("b.example:8443", b"x=1") == "https://b.example:8443/webhooks/tw?x=1"
    assert url("a.example", b"") == "https://a.example/webhooks/tw"  # remembered, unchanged
    assert url("", b"", ["10.0.0.1", 8000]) == "https://10.0.0.1:8000/webhooks/tw"


def _nothing(request: Any) -> None:
    return None
