"""Svix deliveries: signed by the ``svix`` SDK itself, with its default ``svix-*`` header names.

Svix is Standard Webhooks under other header names (only white-labelled accounts send
``webhook-*``), and many providers deliver through it; the standard-webhooks verifier and its
default key must take both spellings. The reverse direction is checked too: what our signer
sends verifies in the SDK.
"""

from __future__ import annotations

import datetime

import pytest
from svix.webhooks import Webhook, WebhookVerificationError

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier
from inbox._receiving.extract import extraction_for
from tests.verifiers._proofs import proves

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_2Kf1sFq3xYp9bN0cQ7aVtUe8Lm"
BODY = b'{"type":"invoice.paid","data":{"id":"in_1","amount":4200}}'
NOW = 1_700_000_000


def svix_headers(body: bytes = BODY, *, msg_id: str = MSG_ID, now: int = NOW) -> dict[str, str]:
    """The three headers a default (not white-labelled) Svix account sends."""
    timestamp = datetime.datetime.fromtimestamp(now, datetime.UTC)
    signature = Webhook(SECRET).sign(msg_id, timestamp, body.decode())
    return {"svix-id": msg_id, "svix-timestamp": str(now), "svix-signature": signature}


def request(headers: dict[str, str], body: bytes = BODY) -> WebhookRequest:
    headers = {**headers, "content-type": "application/json"}
    return WebhookRequest("POST", "https://example.com/webhooks/svix", headers, body)


def verify(req: WebhookRequest, *, now: float = NOW) -> None:
    build_verifier("standard-webhooks", secrets=[SECRET]).verify(req, now=now)


def reason(req: WebhookRequest) -> str:
    with pytest.raises(VerificationError) as info:
        verify(req)
    return info.value.reason


@proves("standard-webhooks", "sdk-signs")
def test_a_delivery_signed_by_the_svix_sdk_verifies() -> None:
    verify(request(svix_headers()))


def test_its_key_is_the_svix_id_and_its_type_the_body_type() -> None:
    key, event_type = extraction_for("standard-webhooks").extract(request(svix_headers()))
    assert (key, event_type) == (MSG_ID, "invoice.paid")


def test_a_tampered_body_fails() -> None:
    tampered = BODY.replace(b"4200", b"9999")
    assert reason(request(svix_headers(), body=tampered)) == "bad_signature"


def test_another_svix_id_than_the_signed_one_fails() -> None:
    headers = {**svix_headers(), "svix-id": "msg_other"}
    assert reason(request(headers)) == "bad_signature"


def test_an_old_svix_timestamp_is_refused() -> None:
    assert reason(request(svix_headers(now=NOW - 3600))) == "timestamp_too_old"


def test_a_missing_svix_signature_is_missing_header() -> None:
    headers = svix_headers()
    del headers["svix-signature"]
    assert reason(request(headers)) == "missing_header"


@proves("standard-webhooks", "sdk-verifies")
def test_what_our_signer_sends_verifies_in_the_svix_sdk() -> None:
    signer = build_signer("standard-webhooks", secrets=[SECRET])
    headers = signer.sign(body=BODY, url="", now=datetime.datetime.now().timestamp(), msg_id=MSG_ID)
    Webhook(SECRET).verify(BODY, headers)  # raises WebhookVerificationError if not
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(BODY + b" ", headers)
