"""Alipay asynchronous notifications, ``sign_type=RSA2`` (SHA256withRSA, PKCS#1 v1.5).

The signature travels *in the form body* (``sign``), not in a header. The signed string is
every other parameter except ``sign`` and ``sign_type``, with empty values skipped (as
Alipay's SDKs do), sorted by name, as ``name=value`` joined by ``&``, values URL-decoded and
encoded in the notification's ``charset``. The legacy ``RSA`` (SHA-1) type is refused.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus

from cryptography.hazmat.primitives.asymmetric import rsa

from inbox._core.errors import VerificationError

from ._base import FORM_CONTENT_TYPE, WebhookRequest, b64decode_lenient, parse_form
from ._keys import load_rsa_private_key, load_rsa_public_key, rsa_sha256_sign, rsa_sha256_verify
from ._provider import About, Provider, ProviderConfig, Sample, iso_time, specs

__all__ = ["AlipaySigner", "AlipayVerifier"]

_UNSIGNED = frozenset({"sign", "sign_type"})
_SIGN_TYPE = "RSA2"


def _params(body: bytes) -> dict[str, str]:
    """The form parameters, decoded in the charset the notification declares."""
    # The charset is ASCII, so a first pass in latin-1 (which decodes anything) finds it.
    declared = dict(parse_form(body, charset="latin-1")).get("charset", "").strip()
    pairs = parse_form(body, charset=declared or "utf-8")
    params = dict(pairs)
    if len(params) != len(pairs):
        # A repeated name makes "the" value ambiguous: refuse rather than pick one.
        raise VerificationError("malformed_body")
    return params


def _signed_content(params: dict[str, str]) -> bytes:
    charset = params.get("charset", "utf-8").strip() or "utf-8"
    text = "&".join(
        f"{name}={params[name]}"
        for name in sorted(params)
        if name not in _UNSIGNED and params[name]
    )
    try:
        return text.encode(charset)
    except (LookupError, UnicodeEncodeError):
        raise VerificationError("malformed_body") from None


@dataclass(frozen=True, slots=True)
class AlipayVerifier:
    """Any configured Alipay public key verifying the signature passes (key rotation)."""

    public_keys: Sequence[rsa.RSAPublicKey]
    name: str = field(default="alipay")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Rebuild the signed string from the form body and check ``sign`` against it."""
        params = _params(request.body)
        encoded = params.get("sign", "")
        if not encoded:
            raise VerificationError("missing_signature")
        if params.get("sign_type", _SIGN_TYPE) != _SIGN_TYPE:
            raise VerificationError("no_supported_signature")
        try:
            signature = b64decode_lenient(encoded)
        except ValueError:
            raise VerificationError("malformed_signature") from None
        content = _signed_content(params)
        if not any(rsa_sha256_verify(key, signature, content) for key in self.public_keys):
            raise VerificationError("bad_signature")


@dataclass(frozen=True, slots=True)
class AlipaySigner:
    """Signs like Alipay: appends ``sign_type`` and ``sign`` to the form body.

    ``sign`` alone only returns the content type; use ``sign_request`` (or ``sign_body``),
    since the signature has to go into the body.
    """

    private_key: rsa.RSAPrivateKey

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the form content type; the signature itself is added by ``sign_body``."""
        return {"content-type": f"{FORM_CONTENT_TYPE}; charset=utf-8"}

    def sign_body(self, *, body: bytes, url: str, now: float, msg_id: str) -> bytes:
        """Return ``body`` with ``sign_type=RSA2`` and its ``sign`` appended.

        The original bytes are kept as they are (only appended to), so what the sender
        wrote is exactly what the receiver parses.
        """
        params = _params(body)
        if _UNSIGNED & params.keys():
            raise ValueError("the body to sign already has sign or sign_type")
        signature = base64.b64encode(rsa_sha256_sign(self.private_key, _signed_content(params)))
        extra = f"sign_type={_SIGN_TYPE}&sign={quote_plus(signature.decode())}".encode()
        return body + b"&" + extra if body else extra


def _verifier(c: ProviderConfig) -> AlipayVerifier:
    c.allow_options()
    keys = [load_rsa_public_key(k) for k in c.key_list()]
    if not keys:
        raise ValueError(f"{c.name}: at least one Alipay public key (PEM) is required")
    return AlipayVerifier(keys)


def _signer(c: ProviderConfig) -> AlipaySigner:
    c.allow_options()
    return AlipaySigner(load_rsa_private_key(c.require_private_key()))


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "notify_time": iso_time(s.now).replace("T", " ")[:19],
        "app_id": "2021000000000000",
        "charset": "utf-8",
        "version": "1.0",
        "trade_no": "2024" + uuid.uuid4().hex[:20],
        "out_trade_no": "inbox-send-" + s.msg_id[-12:],
        "trade_status": "TRADE_SUCCESS",
        "total_amount": "0.01",
    }


PROVIDER = Provider(
    name="alipay",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Alipay",
        family="payments",
        signs="RSA2 (SHA256withRSA) of the sorted form parameters but sign and sign_type",
        unsigned="nothing else: notify_id (the key) and notify_type are signed parameters",
        proof="docs-only",
        proof_source="https://opendocs.alipay.com/common/02mse7",
    ),
    key_specs=specs("form:notify_id"),
    type_specs=specs("form:notify_type"),
    sample=_sample,
    sample_type="trade_status_sync",
    posts_form=True,
    # Alipay retries until the body is exactly "success".
    accepted_reply=(b"success", "text/plain"),
)
