"""Stripe's ``Stripe-Signature`` header.

Stripe publishes no fixed signature vector; stripe/stripe-python tests/test_webhook.py computes
its headers at test time (secret ``whsec_test_secret``, the payload below) the same way these
tests do, and its cases (malformed header, only ``v0``, one bad plus one good ``v1``) are
mirrored here. The signature below was computed independently with ``hmac`` in this file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_verifier
from tests.verifiers._proofs import proves

# The payload and secret of stripe/stripe-python tests/test_webhook.py.
SECRET = "whsec_test_secret"
PAYLOAD = b"""{
  "id": "evt_test_webhook",
  "object": "event",
  "data": { "object": { "id": "rdr_123", "object": "terminal.reader" } }
}"""
NOW = 1_700_000_000


def hex_sig(secret: bytes, timestamp: int = NOW, body: bytes = PAYLOAD) -> str:
    return hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def verify(header: str, *, secrets: tuple[str, ...] = (SECRET,)) -> None:
    request = WebhookRequest(
        "POST", "https://x/webhooks/stripe", {"stripe-signature": header}, PAYLOAD
    )
    build_verifier("stripe", secrets=secrets).verify(request, now=NOW)


def reason(header: str) -> str:
    with pytest.raises(VerificationError) as info:
        verify(header)
    return info.value.reason


@proves("stripe", "docs-twin")
def test_secret_is_used_with_its_prefix() -> None:
    verify(f"t={NOW},v1={hex_sig(SECRET.encode())}")


def test_stripping_the_prefix_is_the_classic_bug() -> None:
    """A sender that HMACs with the secret minus ``whsec_`` must not verify."""
    stripped = hex_sig(SECRET.removeprefix("whsec_").encode())
    assert reason(f"t={NOW},v1={stripped}") == "bad_signature"


def test_base64_decoding_the_secret_is_also_wrong() -> None:
    secret = "whsec_dGVzdHNlY3JldA=="
    decoded = hex_sig(base64.b64decode(secret.removeprefix("whsec_")))
    with pytest.raises(VerificationError):
        verify(f"t={NOW},v1={decoded}", secrets=(secret,))


def test_one_bad_and_one_good_v1() -> None:
    verify(f"t={NOW},v1=bad_signature,v1={hex_sig(SECRET.encode())}")


def test_v0_is_ignored_and_alone_is_unsupported() -> None:
    good = hex_sig(SECRET.encode())
    verify(f"t={NOW},v0=aaaa,v1={good}")
    assert reason(f"t={NOW},v0={good}") == "no_supported_signature"


@pytest.mark.parametrize(
    "header",
    ["i'm not even a real signature header", "bad_header", "v1=abc", "t=abc,v1=abc", "t=,v1=a"],
)
def test_malformed_header(header: str) -> None:
    assert reason(header) == "malformed_header"


def test_uppercase_hex_is_accepted() -> None:
    verify(f"t={NOW},v1={hex_sig(SECRET.encode()).upper()}")


def test_spaces_after_commas_are_tolerated() -> None:
    verify(f"t={NOW}, v1={hex_sig(SECRET.encode())}")
