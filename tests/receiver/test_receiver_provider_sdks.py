"""Deliveries as the providers' own SDKs sign them, through the HTTP receiver.

Our signer and our verifier agreeing proves little when both read the spec the same wrong way;
here the request is signed by the provider's SDK (or, where none signs, built to the provider's
documented header set) and must be stored, or refused with nothing stored.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient
from svix.webhooks import Webhook
from twilio.request_validator import HMAC_SHA256, RequestValidator

from inbox import Settings, create_app
from tests.receiver.conftest import SW_SECRET, count_events, event_rows

SHOPIFY_SECRET = "shpss_test_secret"
TWILIO_SHARED_KEY = "twilio-shared-key-secret"


@pytest.fixture
def client(receiver_url: str) -> Iterator[TestClient]:
    settings = Settings(
        database={"url": receiver_url},
        sources=[
            {"name": "svix", "verifier": "standard-webhooks", "secrets": [SW_SECRET]},
            {"name": "shop", "verifier": "shopify", "secrets": [SHOPIFY_SECRET]},
            {
                "name": "sms",
                "verifier": "twilio",
                "secrets": ["twilio-auth-token", TWILIO_SHARED_KEY],
                "public_url": "https://hooks.example.com/webhooks/sms",
            },
        ],
        receiver={"write_timeout_seconds": 2.0},
    )
    with TestClient(create_app(settings)) as client:
        yield client


def svix_delivery(msg_id: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"type": "invoice.paid", "data": {"id": "in_1"}}).encode()
    signature = Webhook(SW_SECRET).sign(msg_id, datetime.datetime.now(datetime.UTC), body.decode())
    timestamp = str(int(time.time()))
    headers = {"svix-id": msg_id, "svix-timestamp": timestamp, "svix-signature": signature}
    return body, {**headers, "content-type": "application/json"}


def test_a_svix_signed_delivery_is_stored_under_its_svix_id(
    client: TestClient, db_url: str
) -> None:
    body, headers = svix_delivery("msg_svix_1")
    response = client.post("/webhooks/svix", content=body, headers=headers)
    assert response.status_code == 200
    assert response.json()["status"] == "accepted"
    [(event_id, source, key, event_type, verifier, stored, raw)] = event_rows(db_url)
    assert (event_id, source, key) == (response.json()["event_id"], "svix", "msg_svix_1")
    assert (event_type, verifier) == ("invoice.paid", "standard-webhooks")
    assert bytes(raw) == body
    assert stored["svix-id"] == "msg_svix_1"


def test_a_tampered_svix_delivery_is_401_and_stores_nothing(
    client: TestClient, db_url: str
) -> None:
    body, headers = svix_delivery("msg_svix_2")
    tampered = body.replace(b"in_1", b"in_2")
    response = client.post("/webhooks/svix", content=tampered, headers=headers)
    assert response.status_code == 401
    assert count_events(db_url) == 0


def test_a_twilio_delivery_signed_with_a_shared_key_and_hmac_sha256_is_stored(
    client: TestClient, db_url: str
) -> None:
    params = {"MessageSid": "SM1", "From": "+15005550006", "Body": "hello"}
    public_url = "https://hooks.example.com/webhooks/sms"
    signature = RequestValidator(TWILIO_SHARED_KEY).compute_signature(
        public_url, params, HMAC_SHA256
    )
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "x-twilio-signature": signature,
        "x-twilio-webhooks-signature-settings": "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256",
        "i-twilio-idempotency-token": "tok-sha256-1",
    }
    body = urlencode(params).encode()
    assert client.post("/webhooks/sms", content=body, headers=headers).status_code == 200
    [row] = event_rows(db_url)
    assert (row[1], row[2]) == ("sms", "tok-sha256-1")
    tampered = body.replace(b"hello", b"hullo")
    headers["i-twilio-idempotency-token"] = "tok-sha256-2"
    assert client.post("/webhooks/sms", content=tampered, headers=headers).status_code == 401
    assert count_events(db_url) == 1


def test_a_shopify_events_delivery_is_stored_under_its_event_id(
    client: TestClient, db_url: str
) -> None:
    # The header set of Shopify's library for Events (Shopify/shopify-app-js,
    # packages/apps/shopify-api/lib/webhooks/header-names.ts): no X- prefix.
    body = b'{"topic":"Product","action":"create","handle":"catalog","resource_id":"gid://1"}'
    digest = hmac.new(SHOPIFY_SECRET.encode(), body, hashlib.sha256).digest()
    headers = {
        "content-type": "application/json",
        "shopify-hmac-sha256": base64.b64encode(digest).decode(),
        "shopify-topic": "Product",
        "shopify-shop-domain": "acme.myshopify.com",
        "shopify-api-version": "unstable",
        "shopify-event-id": "ev-7c9d",
        "shopify-handle": "catalog",
        "shopify-action": "create",
        "shopify-resource-id": "gid://shopify/Product/1",
        "shopify-triggered-at": "2026-12-01T10:00:00.000Z",
    }
    response = client.post("/webhooks/shop", content=body, headers=headers)
    assert response.status_code == 200
    [row] = event_rows(db_url)
    assert (row[1], row[2], row[3], row[4]) == ("shop", "ev-7c9d", "Product", "shopify")
    tampered = body.replace(b"create", b"delete")
    headers["shopify-event-id"] = "ev-other"
    assert client.post("/webhooks/shop", content=tampered, headers=headers).status_code == 401
    assert count_events(db_url) == 1
