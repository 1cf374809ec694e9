"""Square and SendGrid against their own SDKs. Both SDKs only verify, so the proof is one
way: what ``inbox send`` posts, their verifier accepts (and refuses once changed); the other
way is a signature written from their docs in this file."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sendgrid.helpers.eventwebhook import EventWebhook
from square.utils.webhooks_helper import verify_signature as square_verify

from inbox._core.errors import VerificationError
from tests.verifiers._ec import EcPair
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

SQUARE_KEY = "sq0wsk-signature-key"
NOTIFICATION_URL = "https://hooks.example.com/webhooks/src"
NOW = 1_700_000_000


def square_accepts(body: bytes, signature: str, url: str = NOTIFICATION_URL) -> bool:
    return square_verify(
        request_body=body.decode(),
        signature_header=signature,
        signature_key=SQUARE_KEY,
        notification_url=url,
    )


@proves("square", "sdk-verifies")
def test_what_inbox_send_posts_as_square_verifies_in_its_sdk() -> None:
    sample = sent("square", now=time.time(), secrets=[SQUARE_KEY])
    signature = sample.headers["x-square-hmacsha256-signature"]
    assert square_accepts(sample.body, signature)
    assert not square_accepts(sample.body + b" ", signature)
    assert not square_accepts(sample.body, signature, url=NOTIFICATION_URL + "/other")


def test_square_signs_the_public_url_behind_a_proxy() -> None:
    public = "https://api.acme.com/square?tenant=1"
    sample = sent("square", now=time.time(), secrets=[SQUARE_KEY], public_url=public)
    signature = sample.headers["x-square-hmacsha256-signature"]
    assert square_accepts(sample.body, signature, url=public)
    found = received(
        "square", sample.headers, sample.body, now=NOW, secrets=[SQUARE_KEY], public_url=public
    )
    assert found[0] == sample.key


def test_a_square_delivery_from_the_docs_recipe_verifies() -> None:
    # https://developer.squareup.com/docs/webhooks/step3validate: base64 HMAC-SHA256 of the
    # notification URL followed by the raw body, under the subscription's signature key.
    body = b'{"merchant_id":"M1","type":"payment.updated","event_id":"e-1","data":{}}'
    digest = hmac.new(SQUARE_KEY.encode(), NOTIFICATION_URL.encode() + body, hashlib.sha256)
    headers = {"x-square-hmacsha256-signature": base64.b64encode(digest.digest()).decode()}
    found = received("square", headers, body, now=NOW, secrets=["old", SQUARE_KEY])
    assert found == ("e-1", "payment.updated")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("square", headers, body.replace(b"e-1", b"e-2"), now=NOW, secrets=[SQUARE_KEY])


def sendgrid_accepts(pair: EcPair, body: bytes, headers: dict[str, str]) -> bool:
    helper = EventWebhook(pair.public_b64)
    return bool(
        helper.verify_signature(
            body.decode(),
            headers["x-twilio-email-event-webhook-signature"],
            headers["x-twilio-email-event-webhook-timestamp"],
        )
    )


@proves("sendgrid", "sdk-verifies")
def test_what_inbox_send_posts_as_sendgrid_verifies_in_its_sdk(
    ec_pair: EcPair, other_ec_pair: EcPair
) -> None:
    keys = {"public_keys": [ec_pair.public_b64], "private_key": ec_pair.private_pem}
    sample = sent("sendgrid", now=time.time(), **keys)
    assert sample.body.startswith(b"[")  # an Event Webhook POST is an array of events
    assert sendgrid_accepts(ec_pair, sample.body, sample.headers)
    assert not sendgrid_accepts(ec_pair, sample.body + b" ", sample.headers)
    assert not sendgrid_accepts(other_ec_pair, sample.body, sample.headers)


def test_a_sendgrid_delivery_from_the_docs_recipe_verifies(
    ec_pair: EcPair, other_ec_pair: EcPair
) -> None:
    # https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features:
    # ECDSA (P-256, SHA-256) over the timestamp header's text followed by the raw body; the
    # signature header is the base64 of the DER signature.
    body = b'[{"email":"a@b.c","event":"delivered","sg_event_id":"ZGVsaXZlcmVk"}]\r\n'
    key = serialization.load_pem_private_key(ec_pair.private_pem.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    signature = key.sign(str(NOW).encode() + body, ec.ECDSA(hashes.SHA256()))
    headers = {
        "X-Twilio-Email-Event-Webhook-Signature": base64.b64encode(signature).decode(),
        "X-Twilio-Email-Event-Webhook-Timestamp": str(NOW),
    }
    keys = [other_ec_pair.public_b64, ec_pair.public_b64]  # rotation
    key_found, _type = received("sendgrid", headers, body, now=NOW, public_keys=keys)
    assert key_found == hashlib.sha256(body).hexdigest()
    with pytest.raises(VerificationError, match="bad_signature"):
        received("sendgrid", headers, body[:-2], now=NOW, public_keys=keys)
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("sendgrid", headers, body, now=NOW + 301, public_keys=keys)


def test_a_sendgrid_key_may_be_pasted_as_pem(ec_pair: EcPair) -> None:
    der = base64.b64decode(ec_pair.public_b64)
    pem = serialization.load_der_public_key(der).public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    sample = sent("sendgrid", now=NOW, public_keys=[pem.decode()], private_key=ec_pair.private_pem)
    received("sendgrid", sample.headers, sample.body, now=NOW, public_keys=[pem.decode()])
