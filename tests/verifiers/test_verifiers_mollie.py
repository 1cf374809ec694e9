"""Mollie's next-gen webhooks against its own SDK (``mollie-api-py``), both ways: its
SignatureValidator signs and we accept; ``inbox send`` signs and it accepts."""

from __future__ import annotations

import time

import pytest
from mollie.utils.webhooks import InvalidSignatureException, SignatureValidator

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

SECRET = "mollie-signing-secret"
OLD = "mollie-old-secret"
NOW = 1_700_000_000
BODY = (
    b'{"resource":"event","id":"event_GvJ8WHrp5isUdRub9CJyH","type":"payment-link.paid",'
    b'"entityId":"pl_qng5gbbv8NAZ5gpM5ZYgx","createdAt":"2023-11-14T22:13:20+00:00"}'
)


def mollie_signed(*secrets: str) -> dict[str, str]:
    values = ("sha256=" + SignatureValidator.create_signature(BODY.decode(), s) for s in secrets)
    return {"X-Mollie-Signature": ", ".join(values)}  # repeated headers, as received


@proves("mollie", "sdk-signs")
def test_an_event_signed_by_the_mollie_sdk_verifies() -> None:
    found = received("mollie", mollie_signed(SECRET), BODY, now=NOW, secrets=[SECRET])
    assert found == ("event_GvJ8WHrp5isUdRub9CJyH", "payment-link.paid")


def test_during_a_rotation_either_side_verifies() -> None:
    # Mollie sends one X-Mollie-Signature per secret while a secret is rotated.
    headers = mollie_signed(OLD, SECRET)
    received("mollie", headers, BODY, now=NOW, secrets=[SECRET])
    received("mollie", headers, BODY, now=NOW, secrets=[OLD])
    with pytest.raises(VerificationError, match="bad_signature"):
        received("mollie", headers, BODY, now=NOW, secrets=["other"])


def test_a_classic_webhook_is_refused() -> None:
    # Classic webhooks post `id=tr_...` unsigned; Mollie advises fetching the payment.
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    with pytest.raises(VerificationError, match="missing_header"):
        received("mollie", headers, b"id=tr_WDqYK6vllg", now=NOW, secrets=[SECRET])


def test_a_signature_without_its_prefix_is_malformed() -> None:
    bare = {"X-Mollie-Signature": SignatureValidator.create_signature(BODY.decode(), SECRET)}
    with pytest.raises(VerificationError, match="malformed_header"):
        received("mollie", bare, BODY, now=NOW, secrets=[SECRET])


@proves("mollie", "sdk-verifies")
def test_what_inbox_send_posts_verifies_in_the_mollie_sdk() -> None:
    sample = sent("mollie", now=time.time(), secrets=[SECRET, OLD])
    signatures = [v.strip() for v in sample.headers["x-mollie-signature"].split(",")]
    assert SignatureValidator.validate(sample.body.decode(), SECRET, signatures)
    assert SignatureValidator.validate(sample.body.decode(), OLD, signatures)
    with pytest.raises(InvalidSignatureException):
        SignatureValidator.validate(sample.body.decode() + " ", SECRET, signatures)
