"""Plaid: ``Plaid-Verification``, a JWT (ES256) whose payload carries ``iat`` and
``request_body_sha256``, the hex SHA-256 of the raw body; its header names the key (``kid``).

The key comes from Plaid's API (``/webhook_verification_key/get`` with the key id, the client
id and secret): that call needs the network, so it is the operator's, never the receiver's.
``public_keys`` is a table of key id -> the key as that call returns it (its JWK, as JSON) or
as PEM. A delivery signed under a key id not in the table is refused (``unknown_key_id``):
fetch that key and add it; keep a rotated-out key until Plaid's ``expired_at``. Plaid's docs
refuse an ``iat`` older than five minutes. A webhook carries no delivery id: the key is the
body's hash; the type is ``webhook_code`` (``SYNC_UPDATES_AVAILABLE``, ...), beside
``webhook_type``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, digests_equal, require_header
from ._keys import load_ec_private_key
from ._provider import About, Provider, ProviderConfig, Sample, signing_key_id_options, specs

__all__ = ["PlaidSigner", "PlaidVerifier", "load_plaid_key"]

_HEADER = "plaid-verification"
_ECDSA = ec.ECDSA(hashes.SHA256())
_COORDINATE = 32  # bytes of a P-256 coordinate, and of each half of an ES256 signature


def _b64url_decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise VerificationError("malformed_header") from None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def load_plaid_key(text: str) -> ec.EllipticCurvePublicKey:
    """A P-256 key as ``/webhook_verification_key/get`` returns it (a JWK), or as PEM."""
    data = text.strip()
    try:
        if data.startswith("{"):
            jwk = json.loads(data)
            if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
                raise ValueError("the JWK is not a P-256 EC key")
            x, y = (int.from_bytes(base64.urlsafe_b64decode(jwk[c] + "==")) for c in "xy")
            return ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()
        key = serialization.load_pem_public_key(data.encode("ascii"))
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ValueError(f"plaid: cannot load the verification key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("plaid: the verification key is not an elliptic-curve key")
    return key


def _parts(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """The JWT's header, payload, signed bytes and signature; shape errors are malformed."""
    pieces = token.split(".")
    if len(pieces) != 3:
        raise VerificationError("malformed_header")
    try:
        header = json.loads(_b64url_decode(pieces[0]))
        payload = json.loads(_b64url_decode(pieces[1]))
    except (ValueError, RecursionError):
        raise VerificationError("malformed_header") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise VerificationError("malformed_header")
    signed = f"{pieces[0]}.{pieces[1]}".encode("ascii", "replace")
    return header, payload, signed, _b64url_decode(pieces[2])


@dataclass(frozen=True, slots=True)
class PlaidVerifier:
    """The key named by ``kid`` verifies the JWT; then its time and its body hash."""

    keys: Mapping[str, ec.EllipticCurvePublicKey]
    tolerance_seconds: int
    name: str = field(default="plaid")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the JWT's algorithm, key and signature, then ``iat`` and the body's hash."""
        header, payload, signed, signature = _parts(require_header(request, _HEADER))
        if header.get("alg") != "ES256":  # never "none", never another algorithm
            raise VerificationError("no_supported_signature")
        key = self.keys.get(str(header.get("kid", "")))
        if key is None:
            raise VerificationError("unknown_key_id")
        if len(signature) != 2 * _COORDINATE:
            raise VerificationError("bad_signature")
        r, s = (int.from_bytes(signature[i : i + _COORDINATE]) for i in (0, _COORDINATE))
        try:
            key.verify(encode_dss_signature(r, s), signed, _ECDSA)
        except InvalidSignature:
            raise VerificationError("bad_signature") from None
        issued = payload.get("iat")
        if isinstance(issued, bool) or not isinstance(issued, int):
            raise VerificationError("malformed_header")
        check_timestamp(str(issued), now=now, tolerance_seconds=self.tolerance_seconds)
        claimed = payload.get("request_body_sha256")
        expected = hashlib.sha256(request.body).hexdigest().encode()
        if not isinstance(claimed, str) or not digests_equal(expected, claimed.encode()):
            raise VerificationError("bad_signature")


@dataclass(frozen=True, slots=True)
class PlaidSigner:
    """Signs as Plaid does, under ``key_id``."""

    private_key: ec.EllipticCurvePrivateKey
    key_id: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the Plaid-Verification JWT."""
        header = {"alg": "ES256", "kid": self.key_id, "typ": "JWT"}
        payload = {"iat": int(now), "request_body_sha256": hashlib.sha256(body).hexdigest()}
        signed = ".".join(_b64url(json.dumps(p).encode()) for p in (header, payload))
        r, s = decode_dss_signature(self.private_key.sign(signed.encode(), _ECDSA))
        raw = r.to_bytes(_COORDINATE) + s.to_bytes(_COORDINATE)
        return {_HEADER: f"{signed}.{_b64url(raw)}"}


def _verifier(c: ProviderConfig) -> PlaidVerifier:
    c.allow_options()
    if not isinstance(c.public_keys, Mapping) or not c.public_keys:
        raise ValueError(
            f"{c.name}: public_keys must be a table of key id (the JWT's kid) -> the key"
            " from /webhook_verification_key/get (its JWK as JSON, or PEM)"
        )
    keys = {kid: load_plaid_key(text) for kid, text in c.public_keys.items()}
    return PlaidVerifier(keys, c.tolerance_seconds)


def _signer(c: ProviderConfig) -> PlaidSigner:
    c.allow_options("key_id")
    key_id = c.string_option("key_id")
    if not key_id:
        raise ValueError(f"{c.name}: option 'key_id' (the kid to sign as) is required")
    return PlaidSigner(load_ec_private_key(c.require_private_key()), key_id)


# `key_id` (the id that `inbox send` signs as) only signs.
_VERIFIER_OPTIONS, _SIGNER_OPTIONS = signing_key_id_options("key_id")


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "webhook_type": "TRANSACTIONS",
        "item_id": s.msg_id,
        "initial_update_complete": True,
        "historical_update_complete": True,
        "environment": "sandbox",
    }


PROVIDER = Provider(
    name="plaid",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Plaid",
        family="payments",
        signs="ES256 JWT (Plaid-Verification) of iat and the body's SHA-256; key by its kid",
        unsigned="nothing; no delivery id (the body's hash); keys are fetched from Plaid's API",
        proof="docs-only",
        proof_source="https://plaid.com/docs/api/webhooks/webhook-verification/",
        tolerance_seconds=300,
        window_source="https://plaid.com/docs/api/webhooks/webhook-verification/"
        " (an iat older than five minutes)",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/webhook_code"),
    sample=_sample,
    sample_type="SYNC_UPDATES_AVAILABLE",
    verifier_options=_VERIFIER_OPTIONS,
    signer_options=_SIGNER_OPTIONS,
)
