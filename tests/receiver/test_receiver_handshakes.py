"""Handshakes end to end: each is answered right after its signature verifies (before a key
is looked for, though it carries one), with the status, content type and body its provider
checks; counted, logged, and never stored. Meta's is a GET, unsigned, answered only with the
source's verify token; Braintree's is a GET answered under its keys. Starlette's test client,
a real PostgreSQL."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import braintree
import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from inbox import ConfigError, Settings, create_app
from tests._commands import environment, run_python
from tests.receiver.conftest import (
    META_SOURCE,
    META_TOKEN,
    META_TOKEN_ENV,
    SLACK_SECRET,
    count_events,
    event_rows,
    signed,
)

ZOOM_SECRET = "zoom-secret-token"
TWITCH_SECRET = "twitch-secret"
BRAINTREE_PUBLIC, BRAINTREE_PRIVATE = "bt-public", "bt-private"
BT_CHALLENGE = "20f9f8ed05f77439fe955c977e4c8a53"
_DISCORD = ed25519.Ed25519PrivateKey.generate()


@pytest.fixture
def settings(receiver_url: str, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv(META_TOKEN_ENV, META_TOKEN)
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
            META_SOURCE,
            {"name": "tokenless", "verifier": "meta", "secrets": ["s"]},
            {
                "name": "braintree",
                "verifier": "braintree",
                "secrets": [BRAINTREE_PRIVATE],
                "options": {"public_key": BRAINTREE_PUBLIC},
            },
            {"name": "bt-keyless", "verifier": "braintree", "secrets": [BRAINTREE_PRIVATE]},
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


SUBSCRIBE = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="


def test_metas_subscription_gets_its_challenge_as_text_and_is_not_stored(
    client: TestClient, db_url: str
) -> None:
    with capture_logs() as logs:
        response = client.get(f"/webhooks/meta?{SUBSCRIBE}{META_TOKEN}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.content == b"1158201444"
    assert count_events(db_url) == 0
    [answered] = [e for e in logs if e["event"] == "handshake_answered"]
    assert answered["source"] == "meta"
    assert META_TOKEN not in repr(logs)
    metrics = client.get("/metrics").text
    assert 'inbox_receiver_requests_total{outcome="handshake",source="meta"} 1.0' in metrics


def test_braintrees_challenge_gets_the_sdks_answer_and_is_not_stored(
    client: TestClient, db_url: str
) -> None:
    config = braintree.Configuration(
        braintree.Environment.Sandbox,
        merchant_id="m",
        public_key=BRAINTREE_PUBLIC,
        private_key=BRAINTREE_PRIVATE,
    )
    expected = braintree.BraintreeGateway(config).webhook_notification.verify(BT_CHALLENGE)
    response = client.get(f"/webhooks/braintree?bt_challenge={BT_CHALLENGE}")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == expected
    assert count_events(db_url) == 0


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        (f"/webhooks/meta?{SUBSCRIBE}guess", "bad_verify_token"),
        ("/webhooks/meta", "bad_verify_token"),
        (f"/webhooks/tokenless?{SUBSCRIBE}{META_TOKEN}", "no_verify_token"),
        ("/webhooks/braintree?bt_challenge=not-hex", "bad_challenge"),
        (f"/webhooks/bt-keyless?bt_challenge={BT_CHALLENGE}", "no_public_key"),
    ],
)
def test_a_subscription_without_the_token_is_forbidden(
    client: TestClient, db_url: str, path: str, reason: str
) -> None:
    with capture_logs() as logs:
        response = client.get(path)
    assert response.status_code == 403
    [refused] = [e for e in logs if e["event"] == "webhook_rejected"]
    assert refused["reason"] == reason
    assert META_TOKEN not in repr(logs)
    assert count_events(db_url) == 0


@pytest.mark.parametrize("path", ["/webhooks/slack", "/webhooks/nope", "/webhooks/twitch"])
def test_a_get_to_a_source_without_a_get_handshake_is_still_a_405(
    client: TestClient, path: str
) -> None:
    response = client.get(f"{path}?{SUBSCRIBE}{META_TOKEN}")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert client.put("/webhooks/meta").status_code == 405


def test_a_signed_meta_notification_is_stored_under_its_body_hash(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    request = signed(settings, "meta", event_type="messages")
    response = client.post("/webhooks/meta", content=request.body, headers=request.headers)
    assert response.status_code == 200
    [row] = event_rows(db_url)
    assert (row[2], row[3]) == (hashlib.sha256(request.body).hexdigest(), "messages")


def test_an_unset_verify_token_variable_stops_the_start(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(META_TOKEN_ENV)
    with pytest.raises(ConfigError, match=META_TOKEN_ENV):
        create_app(settings)


def test_config_check_finds_the_verify_token_and_never_prints_it(tmp_path: Path) -> None:
    config = tmp_path / "inbox.toml"
    config.write_text(
        '[[sources]]\nname = "wa"\nverifier = "meta"\nsecrets = ["app-secret"]\n'
        f'options = {{ verify_token_env = "{META_TOKEN_ENV}" }}\n'
    )
    base = environment(without=("INBOX_",))
    found = run_python(
        "-m",
        "inbox",
        "--config",
        str(config),
        "config",
        "check",
        env={**base, META_TOKEN_ENV: META_TOKEN},
    )
    assert found.returncode == 0, found.stderr
    assert META_TOKEN not in found.stdout + found.stderr
    missing = run_python("-m", "inbox", "--config", str(config), "config", "check", env=base)
    assert missing.returncode == 2
    assert f"{META_TOKEN_ENV} is not set" in missing.stderr
