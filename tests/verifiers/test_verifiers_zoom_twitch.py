"""Zoom and Twitch EventSub: neither publishes a Python library that verifies, so each is
proven by a second implementation written here from its docs page, signing what we accept
and accepting what ``inbox send`` posts; their handshakes are answered from the records."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, provider
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000
ZOOM_SECRET = "zoom-secret-token"
TWITCH_SECRET = "twitch-subscription-secret"


# -- Zoom: https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events ----------


def zoom_docs_signature(secret: str, timestamp: str, body: bytes) -> str:
    # "v0:" + x-zm-request-timestamp + ":" + the raw body, HMAC-SHA256 under the secret
    # token, hex, prefixed "v0=".
    message = f"v0:{timestamp}:{body.decode()}"
    return "v0=" + hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


@proves("zoom", "docs-twin")
def test_a_zoom_event_signed_from_the_docs_verifies() -> None:
    body = b'{"event":"meeting.started","event_ts":1700000000123,"payload":{"object":{}}}'
    headers = {
        "x-zm-request-timestamp": str(NOW),
        "x-zm-signature": zoom_docs_signature(ZOOM_SECRET, str(NOW), body),
    }
    found = received("zoom", headers, body, now=NOW, secrets=["old", ZOOM_SECRET])
    assert found == (hashlib.sha256(body).hexdigest(), "meeting.started")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("zoom", headers, body + b" ", now=NOW, secrets=[ZOOM_SECRET])


@proves("zoom", "docs-twin")
def test_what_inbox_send_posts_as_zoom_verifies_by_the_docs() -> None:
    sample = sent("zoom", now=time.time(), secrets=[ZOOM_SECRET])
    timestamp = sample.headers["x-zm-request-timestamp"]
    expected = zoom_docs_signature(ZOOM_SECRET, timestamp, sample.body)
    assert hmac.compare_digest(sample.headers["x-zm-signature"], expected)


def test_zooms_url_validation_answers_under_the_secret_that_signed_it() -> None:
    # The docs' answer: plainToken, and encryptedToken = hex HMAC-SHA256 of plainToken under
    # the secret token.
    body = json.dumps(
        {"event": "endpoint.url_validation", "payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"}}
    ).encode()
    headers = {
        "x-zm-request-timestamp": str(NOW),
        "x-zm-signature": zoom_docs_signature(ZOOM_SECRET, str(NOW), body),
    }
    handshake = provider("zoom").handshake
    assert handshake is not None
    request = WebhookRequest("POST", "https://x/webhooks/zoom", headers, body)
    encrypted = hmac.new(ZOOM_SECRET.encode(), b"qgg8vlvZRS6UYooatFL8Aw", hashlib.sha256)
    answer = {"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": encrypted.hexdigest()}
    assert handshake(request, ["retired", ZOOM_SECRET]) == answer
    assert handshake(request, ["another"]) is None  # cannot happen after verification
    event = WebhookRequest("POST", "https://x", headers, b'{"event":"meeting.started"}')
    assert handshake(event, [ZOOM_SECRET]) is None


# -- Twitch: https://dev.twitch.tv/docs/eventsub/handling-webhook-events/ ----------------


def twitch_docs_signature(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    # The message id, the timestamp header and the raw body concatenated, HMAC-SHA256 under
    # the subscription's secret, hex, prefixed "sha256=".
    message = msg_id + timestamp + body.decode()
    return "sha256=" + hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def _twitch_headers(body: bytes, *, timestamp: str, kind: str = "notification") -> dict[str, str]:
    msg_id = "befa7b53-d79d-478f-86b9-120f112b044e"
    return {
        "Twitch-Eventsub-Message-Id": msg_id,
        "Twitch-Eventsub-Message-Timestamp": timestamp,
        "Twitch-Eventsub-Message-Signature": twitch_docs_signature(
            TWITCH_SECRET, msg_id, timestamp, body
        ),
        "Twitch-Eventsub-Message-Type": kind,
        "Twitch-Eventsub-Subscription-Type": "channel.follow",
    }


@proves("twitch", "docs-twin")
def test_a_twitch_notification_signed_from_the_docs_verifies_in_its_window() -> None:
    body = b'{"subscription":{"type":"channel.follow"},"event":{"user_name":"x"}}'
    headers = _twitch_headers(body, timestamp="2023-11-14T22:13:20.123456789Z")  # NOW + .12
    found = received(
        "twitch",
        headers,
        body,
        now=NOW + 600,
        secrets=["old", TWITCH_SECRET],
        tolerance_seconds=600,
    )
    assert found == ("befa7b53-d79d-478f-86b9-120f112b044e", "channel.follow")
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received(
            "twitch", headers, body, now=NOW + 601, secrets=[TWITCH_SECRET], tolerance_seconds=600
        )
    with pytest.raises(VerificationError, match="bad_signature"):
        received("twitch", headers, body + b" ", now=NOW, secrets=[TWITCH_SECRET])
    bad = {**headers, "Twitch-Eventsub-Message-Timestamp": "yesterday"}
    with pytest.raises(VerificationError, match="malformed_header"):
        received("twitch", bad, body, now=NOW, secrets=[TWITCH_SECRET])


@proves("twitch", "docs-twin")
def test_what_inbox_send_posts_as_twitch_verifies_by_the_docs() -> None:
    sample = sent("twitch", now=time.time(), secrets=[TWITCH_SECRET])
    h = sample.headers
    expected = twitch_docs_signature(
        TWITCH_SECRET,
        h["twitch-eventsub-message-id"],
        h["twitch-eventsub-message-timestamp"],
        sample.body,
    )
    assert hmac.compare_digest(h["twitch-eventsub-message-signature"], expected)
    assert h["twitch-eventsub-message-id"] == sample.key
    assert h["twitch-eventsub-message-type"] == "notification"


def test_twitchs_callback_verification_echoes_the_challenge_as_text() -> None:
    body = b'{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{}}'
    headers = {
        k.lower(): v
        for k, v in _twitch_headers(
            body, timestamp="2023-11-14T22:13:20Z", kind="webhook_callback_verification"
        ).items()
    }
    handshake = provider("twitch").handshake
    assert handshake is not None
    request = WebhookRequest("POST", "https://x/webhooks/twitch", headers, body)
    assert handshake(request, [TWITCH_SECRET]) == "pogchamp-kappa-360noscope-vohiyo"
    notification = {**headers, "twitch-eventsub-message-type": "notification"}
    assert handshake(WebhookRequest("POST", "https://x", notification, body), []) is None
