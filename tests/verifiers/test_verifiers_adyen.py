"""Adyen's standard webhooks against its own library (``Adyen``), both ways: it signs a
notification item and we accept; ``inbox send`` signs and it accepts. Adyen signs eight
fields of each item, not the bytes, so the contract tests' byte tampering does not apply:
the tests here change signed and unsigned fields instead."""

from __future__ import annotations

import copy
import hashlib
import json
import time
from typing import Any

import pytest
from Adyen.util import generate_notification_sig, is_valid_hmac_notification

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

KEY = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"
OLD_KEY = "00" * 32
NOW = 1_700_000_000


def item(**changes: Any) -> dict[str, Any]:
    base = {
        "pspReference": "7914073381342284",
        "merchantAccountCode": "TestMerchant",
        "merchantReference": "TestPayment-1407325143704",
        "amount": {"value": 1130, "currency": "EUR"},
        "eventCode": "AUTHORISATION",
        "success": "true",
        "eventDate": "2019-05-06T17:15:34.121+02:00",
        "paymentMethod": "visa",
    }
    return {**base, **changes}


def notification(*items: dict[str, Any]) -> bytes:
    entries = [{"NotificationRequestItem": i} for i in items]
    return json.dumps({"live": "false", "notificationItems": entries}).encode()


def adyen_signed(entry: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    signature = generate_notification_sig(entry, key).decode()
    return {**entry, "additionalData": {"hmacSignature": signature}}


def test_the_example_adyen_libraries_test_against() -> None:
    # Adyen/adyen-ruby-api-library, spec/utils/hmac_validator_spec.rb (and the Python and
    # Node libraries' HMAC tests): this key and item sign to this signature.
    signed = item(additionalData={"hmacSignature": "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="})
    body = notification(signed)
    assert received("adyen", {}, body, now=NOW, secrets=[KEY]) == (
        hashlib.sha256(body).hexdigest(),
        None,
    )


@proves("adyen", "sdk-signs")
def test_a_notification_signed_by_the_adyen_library_verifies() -> None:
    body = notification(adyen_signed(item()), adyen_signed(item(eventCode="CAPTURE")))
    received("adyen", {}, body, now=NOW, secrets=[OLD_KEY, KEY])  # rotation
    with pytest.raises(VerificationError, match="bad_signature"):
        received("adyen", {}, body, now=NOW, secrets=[OLD_KEY])


@pytest.mark.parametrize(
    "change",
    [
        {"eventCode": "REFUND"},
        {"success": "false"},
        {"amount": {"value": 1131, "currency": "EUR"}},
        {"pspReference": "7914073381342285"},
        {"originalReference": "7914073381342284"},
    ],
)
def test_a_changed_signed_field_fails(change: dict[str, Any]) -> None:
    signed = adyen_signed(item())
    body = notification({**signed, **change})
    with pytest.raises(VerificationError, match="bad_signature"):
        received("adyen", {}, body, now=NOW, secrets=[KEY])


def test_every_item_must_verify() -> None:
    body = notification(adyen_signed(item()), adyen_signed(item(), key=OLD_KEY))
    with pytest.raises(VerificationError, match="bad_signature"):
        received("adyen", {}, body, now=NOW, secrets=[KEY])


def test_unsigned_fields_are_not_covered() -> None:
    # What the docs line says: eventDate and the rest travel beside the signature.
    signed = adyen_signed(item())
    received(
        "adyen", {}, notification({**signed, "eventDate": "2030-01-01"}), now=NOW, secrets=[KEY]
    )


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "malformed_body"),
        (b'{"notificationItems":[]}', "malformed_body"),
        (notification(item()), "missing_signature"),
        (notification(item(additionalData={"hmacSignature": "!!"})), "malformed_signature"),
    ],
)
def test_a_malformed_notification_is_refused(body: bytes, reason: str) -> None:
    with pytest.raises(VerificationError, match=reason):
        received("adyen", {}, body, now=NOW, secrets=[KEY])


@proves("adyen", "sdk-verifies")
def test_what_inbox_send_posts_verifies_in_the_adyen_library() -> None:
    sample = sent("adyen", now=time.time(), secrets=[KEY])
    [entry] = json.loads(sample.body)["notificationItems"]
    signed = entry["NotificationRequestItem"]
    assert is_valid_hmac_notification(copy.deepcopy(signed), KEY)
    assert not is_valid_hmac_notification({**signed, "eventCode": "REFUND"}, KEY)


def test_inbox_send_makes_two_events_of_two_sends() -> None:
    now = time.time()
    first, second = (sent("adyen", now=now, secrets=[KEY]) for _ in range(2))
    keys = {received("adyen", {}, s.body, now=now, secrets=[KEY])[0] for s in (first, second)}
    assert len(keys) == 2


def test_a_key_that_is_not_hex_is_refused_at_start_up() -> None:
    from inbox._providers import build_verifier

    with pytest.raises(ValueError, match="hex"):
        build_verifier("adyen", secrets=["not-hex"])
