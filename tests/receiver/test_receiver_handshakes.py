"""Handshakes end to end: each is answered right after its signature verifies (before a key
is looked for, though it carries one), with the status, content type and body its provider
checks; counted, logged, and never stored. Starlette's test client, a real PostgreSQL."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from inbox import Settings, create_app
from tests.receiver.conftest import SLACK_SECRET, count_events, event_rows, signed

ZOOM_SECRET = "zoom-secret-token"
TWITCH_SECRET = "twitch-secret"
_DISCORD = ed25519.Ed25519PrivateKey.generate()


@pytest.fixture
def settings(receiver_url: str) -> Settings:
    return Settings(
        database={"url": receiver_url},
        receiver={"write_timeout_seconds": 2.0},
        sources=[
            {"name": "slack", "verifier": "slack", "secrets": [SLACK_SECRET]},
            {
                "name": "discord",
                "verifier": "discord",
                "public_keys": [_DISCORD.public_key().public_bytes_raw().hex()],
                "private_key": _DISCORD.private_bytes_raw().hex(),
            },
            {"name": "zoom", "verifier": "zoom", "secrets": [ZOOM_SECRET, "retired"]},
            {"name": "twitch", "verifier": "twitch", "secrets": [TWITCH_SECRET]},
        ],
    )


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        yield client


def _zoom_answer(token: str) -> dict[str, str]:
    digest = hmac.new(ZOOM_SECRET.encode(), token.encode(), hashlib.sha256).hexdigest()
    return {"plainToken": token, "encryptedToken": digest}


# source, the handshake's body, headers changed after signing, the reply's content type, body
HANDSHAKES: list[tuple[str, dict[str, Any], dict[str, str], str, bytes]] = [
    (
        "slack",
        {"token": "t", "challenge": "c-123", "type": "url_verification"},
        {},
        "application/json",
        b'{"challenge":"c-123"}',
    ),
    (
        "discord",
        {"id": "1183416785912680448", "application_id": "11", "type": 1, "version": 1},
        {},
        "application/json",
        b'{"type":1}',
    ),
    (
        "zoom",
        {"event": "endpoint.url_validation", "payload": {"plainToken": "qgg8vlvZRS6UYoo"}},
        {},
        "application/json",
        json.dumps(_zoom_answer("qgg8vlvZRS6UYoo"), separators=(",", ":")).encode(),
    ),
    (
        "twitch",
        {"challenge": "pogchamp-kappa-360noscope", "subscription": {"type": "channel.follow"}},
        {"twitch-eventsub-message-type": "webhook_callback_verification"},
        "text/plain",
        b"pogchamp-kappa-360noscope",
    ),
]


@pytest.mark.parametrize(
    ("source", "payload", "changed", "content_type", "reply"),
    HANDSHAKES,
    ids=[h[0] for h in HANDSHAKES],
)
def test_a_handshake_is_answered_counted_and_not_stored(
    client: TestClient,
    settings: Settings,
    db_url: str,
    source: str,
    payload: dict[str, Any],
    changed: dict[str, str],
    content_type: str,
    reply: bytes,
) -> None:
    request = signed(settings, source, body=json.dumps(payload).encode())
    with capture_logs() as logs:
        response = client.post(
            f"/webhooks/{source}", content=request.body, headers={**request.headers, **changed}
        )
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == content_type
    assert response.content == reply
    assert "inbox-event-id" not in response.headers
    assert count_events(db_url) == 0
    [answered] = [e for e in logs if e["event"] == "handshake_answered"]
    assert answered["source"] == source
    metrics = client.get("/metrics").text
    assert f'inbox_receiver_requests_total{{outcome="handshake",source="{source}"}} 1.0' in metrics


def test_an_unsigned_handshake_is_refused(client: TestClient, db_url: str) -> None:
    body = b'{"id":"1","type":1}'
    response = client.post("/webhooks/discord", content=body)
    assert response.status_code == 401
    assert count_events(db_url) == 0


def test_an_interaction_is_stored_and_deferred(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    request = signed(settings, "discord", event_type="hello")
    response = client.post("/webhooks/discord", content=request.body, headers=request.headers)
    assert response.status_code == 200
    assert response.json() == {"type": 5}
    [row] = event_rows(db_url)
    assert (row[2], row[3]) == (request.key, "hello")
