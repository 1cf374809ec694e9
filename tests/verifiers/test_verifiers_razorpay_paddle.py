"""Razorpay and Paddle Billing against their own SDKs. Both SDKs only verify, so the proof
is one way: what ``inbox send`` posts, their verifier accepts (and refuses once changed); the
other way is a signature written from their docs in this file."""

from __future__ import annotations

import hashlib
import hmac
import time
from types import SimpleNamespace

import pytest
from paddle_billing.Notifications import Secret
from paddle_billing.Notifications import Verifier as PaddleSdkVerifier
from razorpay.errors import SignatureVerificationError
from razorpay.utility.utility import Utility

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

RAZORPAY_SECRET = "rzp-webhook-secret"
PADDLE_SECRET = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
NOW = 1_700_000_000


def razorpay_accepts(body: bytes, signature: str) -> bool:
    try:
        Utility(client=None).verify_webhook_signature(body.decode(), signature, RAZORPAY_SECRET)
    except SignatureVerificationError:
        return False
    return True


@proves("razorpay", "sdk-verifies")
def test_what_inbox_send_posts_as_razorpay_verifies_in_its_sdk() -> None:
    sample = sent("razorpay", now=time.time(), secrets=[RAZORPAY_SECRET])
    assert sample.headers["x-razorpay-event-id"] == sample.key
    assert razorpay_accepts(sample.body, sample.headers["x-razorpay-signature"])
    assert not razorpay_accepts(sample.body + b" ", sample.headers["x-razorpay-signature"])


def test_a_razorpay_delivery_from_the_docs_recipe_verifies() -> None:
    # https://razorpay.com/docs/webhooks/validate-test/: HMAC-SHA256 hex of the raw body.
    body = b'{"entity":"event","event":"payment.captured","payload":{}}'
    digest = hmac.new(RAZORPAY_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-Razorpay-Signature": digest, "X-Razorpay-Event-Id": "Hn2qYv1Js3kTQd"}
    found = received("razorpay", headers, body, now=NOW, secrets=["old", RAZORPAY_SECRET])
    assert found == ("Hn2qYv1Js3kTQd", "payment.captured")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("razorpay", headers, body + b" ", now=NOW, secrets=[RAZORPAY_SECRET])


def paddle_accepts(body: bytes, headers: dict[str, str], secrets: list[str]) -> bool:
    request = SimpleNamespace(headers={"Paddle-Signature": headers["paddle-signature"]}, body=body)
    try:
        return bool(PaddleSdkVerifier().verify(request, [Secret(s) for s in secrets]))
    except ConnectionRefusedError:  # how the SDK says that no secret matched
        return False


@proves("paddle", "sdk-verifies")
def test_what_inbox_send_posts_as_paddle_verifies_in_its_sdk() -> None:
    sample = sent("paddle", now=time.time(), secrets=[PADDLE_SECRET])
    assert paddle_accepts(sample.body, sample.headers, [PADDLE_SECRET])
    assert paddle_accepts(sample.body, sample.headers, ["pdl_ntfset_old", PADDLE_SECRET])
    assert not paddle_accepts(sample.body + b" ", sample.headers, [PADDLE_SECRET])


def test_a_paddle_delivery_from_the_docs_recipe_verifies() -> None:
    # https://developer.paddle.com/webhooks/signature-verification: HMAC-SHA256 hex of
    # `{ts}:{body}`, in `ts=...;h1=...`; a rotation sends one h1 per secret.
    body = b'{"event_id":"evt_01h","event_type":"transaction.completed","data":{}}'
    digest = hmac.new(PADDLE_SECRET.encode(), f"{NOW}:".encode() + body, hashlib.sha256)
    header = f"ts={NOW};h1=00ff;h1={digest.hexdigest()}"
    found = received(
        "paddle", {"Paddle-Signature": header}, body, now=NOW + 5, secrets=[PADDLE_SECRET]
    )
    assert found == ("evt_01h", "transaction.completed")
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received(
            "paddle",
            {"Paddle-Signature": header},
            body,
            now=NOW + 6,
            secrets=[PADDLE_SECRET],
            tolerance_seconds=5,
        )
    with pytest.raises(VerificationError, match="malformed_header"):
        received("paddle", {"Paddle-Signature": "h1=00"}, body, now=NOW, secrets=["s"])
