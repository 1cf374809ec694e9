"""Plaid: no Python SDK verifies its webhooks (plaid-python only calls the API that hands out
the key). The JWT is built here a second way, from Plaid's docs page, and its failures are
the ones that page lists."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from inbox._core.errors import VerificationError
from inbox._providers import build_signer
from tests.verifiers._ec import EcPair
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000
BODY = (
    b'{"environment":"sandbox","item_id":"wz666MBjYWTp2PDzzggYhM6oWWmBb",'
    b'"webhook_code":"SYNC_UPDATES_AVAILABLE","webhook_type":"TRANSACTIONS"}'
)


def segment(document: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")


def jwt(pair: EcPair, *, kid: str, iat: int, body: bytes, alg: str = "ES256") -> str:
    # https://plaid.com/docs/api/webhooks/webhook-verification/: the Plaid-Verification
    # header is a JWT signed with ES256; its header names the key (kid), its payload holds
    # iat and request_body_sha256 (hex). A JWS signature is r || s, 32 bytes each.
    key = serialization.load_pem_private_key(pair.private_pem.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    head = segment({"alg": alg, "kid": kid, "typ": "JWT"})
    claims = segment({"iat": iat, "request_body_sha256": hashlib.sha256(body).hexdigest()})
    r, s = decode_dss_signature(key.sign(f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256())))
    raw = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{head}.{claims}." + base64.urlsafe_b64encode(raw).decode().rstrip("=")


@proves("plaid", "docs-twin")
def test_plaid_as_the_docs_describe(ec_pair: EcPair, other_ec_pair: EcPair) -> None:
    keys = {"old-kid": other_ec_pair.public_pem, "kid-1": ec_pair.jwk}
    headers = {"Plaid-Verification": jwt(ec_pair, kid="kid-1", iat=NOW, body=BODY)}
    found = received("plaid", headers, BODY, now=NOW + 300, public_keys=keys)
    assert found == (hashlib.sha256(BODY).hexdigest(), "SYNC_UPDATES_AVAILABLE")
    # "Reject the webhook if iat is more than 5 minutes old."
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("plaid", headers, BODY, now=NOW + 301, public_keys=keys)
    # The body's hash is what binds the token to these bytes.
    with pytest.raises(VerificationError, match="bad_signature"):
        received("plaid", headers, BODY + b" ", now=NOW, public_keys=keys)


@pytest.mark.parametrize(
    ("kid", "alg", "reason"),
    [
        ("kid-unknown", "ES256", "unknown_key_id"),  # fetch it from Plaid, add it
        ("kid-1", "none", "no_supported_signature"),
        ("kid-1", "HS256", "no_supported_signature"),
    ],
)
def test_plaid_refuses_what_the_docs_refuse(
    ec_pair: EcPair, kid: str, alg: str, reason: str
) -> None:
    headers = {"Plaid-Verification": jwt(ec_pair, kid=kid, iat=NOW, body=BODY, alg=alg)}
    with pytest.raises(VerificationError, match=reason):
        received("plaid", headers, BODY, now=NOW, public_keys={"kid-1": ec_pair.jwk})


def test_a_plaid_token_from_another_key_fails(ec_pair: EcPair, other_ec_pair: EcPair) -> None:
    headers = {"Plaid-Verification": jwt(other_ec_pair, kid="kid-1", iat=NOW, body=BODY)}
    with pytest.raises(VerificationError, match="bad_signature"):
        received("plaid", headers, BODY, now=NOW, public_keys={"kid-1": ec_pair.jwk})


@pytest.mark.parametrize("token", ["", "a.b", "a.b.c", "e30.e30.AAAA"])
def test_a_malformed_plaid_token_is_refused(ec_pair: EcPair, token: str) -> None:
    headers = {"Plaid-Verification": token} if token else {}
    with pytest.raises(VerificationError):
        received("plaid", headers, BODY, now=NOW, public_keys={"kid-1": ec_pair.jwk})


def test_inbox_send_signs_as_the_first_key_id(ec_pair: EcPair) -> None:
    keys = {"kid-1": ec_pair.jwk}
    now = time.time()
    first, second = (
        sent("plaid", now=now, public_keys=keys, private_key=ec_pair.private_pem) for _ in range(2)
    )
    for sample in (first, second):
        found = received("plaid", sample.headers, sample.body, now=now, public_keys=keys)
        assert found == (hashlib.sha256(sample.body).hexdigest(), "SYNC_UPDATES_AVAILABLE")
    assert first.body != second.body  # the item id is the delivery's: two sends, two events
    with pytest.raises(ValueError, match="key_id"):
        build_signer("plaid", private_key=ec_pair.private_pem)
