"""WeChat Pay API v3 notifications: SHA256withRSA over ``{timestamp}\\n{nonce}\\n{body}\\n``.

The key is chosen by ``Wechatpay-Serial``: WeChat Pay names which platform certificate (or
platform public key, ``PUB_KEY_ID_...``) signed, and rotates them with an overlap, so the
configuration is a mapping serial -> PEM. An unknown serial is its own failure reason
(``unknown_key_serial``) because the fix is operational: download the new certificate.

The notification's ``resource`` is encrypted with the merchant's APIv3 key;
``decrypt_wechatpay_resource`` opens it once the signature has verified.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, check_timestamp, require_header
from ._keys import load_rsa_private_key, load_rsa_public_key, rsa_sha256_sign, rsa_sha256_verify
from ._provider import (
    About,
    Provider,
    ProviderConfig,
    Sample,
    iso_time,
    signing_key_id_options,
    specs,
)

__all__ = ["WechatPaySigner", "WechatPayVerifier", "decrypt_wechatpay_resource"]

_SIGNATURE_TYPE = "WECHATPAY2-SHA256-RSA2048"


def _signed_content(timestamp: str, nonce: str, body: bytes) -> bytes:
    return f"{timestamp}\n{nonce}\n".encode() + body + b"\n"


@dataclass(frozen=True, slots=True)
class WechatPayVerifier:
    """Verifies against the one key the serial names; never tries the others."""

    public_keys: Mapping[str, rsa.RSAPublicKey]
    tolerance_seconds: int
    name: str = field(default="wechatpay")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check headers, timestamp, the serial's key, then the signature."""
        timestamp = require_header(request, "wechatpay-timestamp")
        nonce = require_header(request, "wechatpay-nonce")
        encoded = require_header(request, "wechatpay-signature")
        serial = require_header(request, "wechatpay-serial")
        signature_type = request.headers.get("wechatpay-signature-type", _SIGNATURE_TYPE)
        if signature_type.strip() != _SIGNATURE_TYPE:
            raise VerificationError("no_supported_signature")
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        key = self.public_keys.get(serial)
        if key is None:
            raise VerificationError("unknown_key_serial")
        try:
            signature = b64decode_lenient(encoded)
        except ValueError:
            raise VerificationError("malformed_header") from None
        if not rsa_sha256_verify(key, signature, _signed_content(timestamp, nonce, request.body)):
            raise VerificationError("bad_signature")


@dataclass(frozen=True, slots=True)
class WechatPaySigner:
    """Signs like WeChat Pay's platform, under the configured ``serial``."""

    private_key: rsa.RSAPrivateKey
    serial: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the four ``wechatpay-*`` headers; ``msg_id`` doubles as the nonce."""
        timestamp = str(int(now))
        signature = rsa_sha256_sign(self.private_key, _signed_content(timestamp, msg_id, body))
        return {
            "wechatpay-timestamp": timestamp,
            "wechatpay-nonce": msg_id,
            "wechatpay-signature": base64.b64encode(signature).decode(),
            "wechatpay-serial": self.serial,
            "wechatpay-signature-type": _SIGNATURE_TYPE,
        }


def decrypt_wechatpay_resource(
    api_v3_key: str, *, nonce: str, associated_data: str, ciphertext_b64: str
) -> bytes:
    """Open a notification's ``resource`` (AEAD_AES_256_GCM; the tag ends the ciphertext).

    ``api_v3_key`` is the merchant's APIv3 key used as UTF-8 bytes (32 for AES-256; shorter
    AES key sizes are accepted too, as WeChat Pay's Go SDK does). A wrong key, nonce,
    associated data or a tampered ciphertext raises ``VerificationError("decryption_failed")``;
    a key of an impossible length raises ``ValueError`` (a configuration error).
    """
    try:
        cipher = AESGCM(api_v3_key.encode())
    except ValueError as exc:
        raise ValueError("the APIv3 key must be 16, 24 or 32 bytes") from exc
    try:
        ciphertext = base64.b64decode(ciphertext_b64, validate=True)
        return cipher.decrypt(nonce.encode(), ciphertext, associated_data.encode())
    except (binascii.Error, InvalidTag, ValueError):
        raise VerificationError("decryption_failed") from None


def _verifier(c: ProviderConfig) -> WechatPayVerifier:
    c.allow_options()
    if not isinstance(c.public_keys, Mapping) or not c.public_keys:
        raise ValueError(
            f"{c.name}: public_keys must be a table of Wechatpay-Serial -> PEM "
            "(platform certificate or public key)"
        )
    keys = {serial: load_rsa_public_key(pem) for serial, pem in c.public_keys.items()}
    return WechatPayVerifier(keys, c.tolerance_seconds)


def _signer(c: ProviderConfig) -> WechatPaySigner:
    c.allow_options("serial")
    serial = c.string_option("serial")
    if not serial:
        raise ValueError(f"{c.name}: option 'serial' (the Wechatpay-Serial to send) is required")
    return WechatPaySigner(load_rsa_private_key(c.require_private_key()), serial)


# `serial` (the id that `inbox send` signs as) only signs.
_VERIFIER_OPTIONS, _SIGNER_OPTIONS = signing_key_id_options("serial")


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "create_time": iso_time(s.now),
        "resource_type": "encrypt-resource",
        "summary": "sent by inbox send",
        "resource": {"algorithm": "AEAD_AES_256_GCM", "associated_data": "transaction"},
    }


PROVIDER = Provider(
    name="wechatpay",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="WeChat Pay",
        family="payments",
        signs="SHA256withRSA of `{timestamp}\\n{nonce}\\n{body}\\n`, key by Wechatpay-Serial",
        unsigned="nothing: the id and event_type are in the signed body",
        proof="docs-only",
        proof_source="https://pay.weixin.qq.com/docs/merchant/development/interface-rules/signature-verification.html",
        tolerance_seconds=300,
        window_source="WeChat Pay's signature-verification page (five minutes)",
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/event_type"),
    sample=_sample,
    sample_type="TRANSACTION.SUCCESS",
    verifier_options=_VERIFIER_OPTIONS,
    signer_options=_SIGNER_OPTIONS,
)
