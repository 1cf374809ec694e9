"""PayPal: ``PAYPAL-TRANSMISSION-SIG``, the base64 SHA256withRSA signature of
``{transmission id}|{transmission time}|{webhook id}|{CRC32 of the body}`` (the CRC32 as an
unsigned decimal) under the key of the certificate that ``PAYPAL-CERT-URL`` names.

What needs the network is left to the operator: downloading that certificate and checking
its chain (PayPal's docs: issued to ``messageverificationcerts.paypal.com`` by a trusted
authority), or PayPal's ``verify-webhook-signature`` API call instead. ``public_keys`` is a
table of certificate id (the URL's last segment, ``CERT-...``) -> the PEM certificate as
downloaded; a delivery naming another certificate is refused as ``unknown_key_id`` (fetch
that one, check it, add it). The URL itself must be HTTPS on PayPal's API hosts, under
``/v1/notifications/certs/``. The ``webhook_id`` option is the webhook's id from PayPal's
dashboard, part of what is signed: a delivery for another webhook does not verify.

The transmission time is signed; PayPal documents no window, so the default one
holds it (each retry is a new transmission, signed anew). The key is
the signed body's event ``id`` (``WH-...``, the same on every retry), the type its
``event_type``; the transmission id changes on each retry and is not the key.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric import rsa

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_header
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

__all__ = ["PayPalSigner", "PayPalVerifier", "paypal_signed_content"]

_ID = "paypal-transmission-id"
_TIME = "paypal-transmission-time"
_SIGNATURE = "paypal-transmission-sig"
_CERT_URL = "paypal-cert-url"
_ALGORITHM = "paypal-auth-algo"
_SHA256_WITH_RSA = "SHA256withRSA"
_HOSTS = frozenset(
    {"api.paypal.com", "api-m.paypal.com", "api.sandbox.paypal.com", "api-m.sandbox.paypal.com"}
)
_CERTS_PATH = "/v1/notifications/certs/"
_TIMESTAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]{1,9})?Z")


def paypal_signed_content(transmission_id: str, time: str, webhook_id: str, body: bytes) -> bytes:
    """What PayPal signs: the ids, the time and the body's CRC32, joined by ``|``."""
    return f"{transmission_id}|{time}|{webhook_id}|{zlib.crc32(body)}".encode()


def _unix_seconds(time: str) -> str:
    match = _TIMESTAMP.fullmatch(time)
    if match is None:
        raise VerificationError("malformed_header")
    moment = datetime.datetime.fromisoformat(match.group(1) + "+00:00")
    return str(int(moment.timestamp()))


def _cert_id(url: str) -> str:
    """The certificate id of a PayPal certificate URL; any other URL is refused."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise VerificationError("untrusted_cert_url") from None
    cert_id = parts.path.removeprefix(_CERTS_PATH)
    if (
        parts.scheme != "https"
        or host not in _HOSTS
        or parts.port is not None
        or not parts.path.startswith(_CERTS_PATH)
        or not cert_id
        or "/" in cert_id
    ):
        raise VerificationError("untrusted_cert_url")
    return cert_id


@dataclass(frozen=True, slots=True)
class PayPalVerifier:
    """The certificate the URL names verifies the signed string; then the time."""

    certificates: Mapping[str, rsa.RSAPublicKey]
    webhook_id: str
    tolerance_seconds: int
    name: str = field(default="paypal")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the algorithm, the certificate URL, the signature, then the time."""
        transmission_id = require_header(request, _ID)
        time = require_header(request, _TIME)
        signature_b64 = require_header(request, _SIGNATURE)
        cert_url = require_header(request, _CERT_URL)
        if require_header(request, _ALGORITHM) != _SHA256_WITH_RSA:
            raise VerificationError("no_supported_signature")
        key = self.certificates.get(_cert_id(cert_url))
        if key is None:
            raise VerificationError("unknown_key_id")
        try:
            signature = base64.b64decode(signature_b64, validate=True)
        except (binascii.Error, ValueError):
            raise VerificationError("malformed_header") from None
        content = paypal_signed_content(transmission_id, time, self.webhook_id, request.body)
        if not rsa_sha256_verify(key, signature, content):
            raise VerificationError("bad_signature")
        check_timestamp(_unix_seconds(time), now=now, tolerance_seconds=self.tolerance_seconds)


@dataclass(frozen=True, slots=True)
class PayPalSigner:
    """Signs as PayPal does, naming certificate ``cert_id`` on PayPal's sandbox host."""

    private_key: rsa.RSAPrivateKey
    cert_id: str
    webhook_id: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the five transmission headers."""
        transmission_id = str(uuid.uuid4())
        time = iso_time(int(now)).replace("+00:00", "Z")
        content = paypal_signed_content(transmission_id, time, self.webhook_id, body)
        signature = base64.b64encode(rsa_sha256_sign(self.private_key, content)).decode()
        return {
            _ID: transmission_id,
            _TIME: time,
            _SIGNATURE: signature,
            _CERT_URL: f"https://api.sandbox.paypal.com{_CERTS_PATH}{self.cert_id}",
            _ALGORITHM: _SHA256_WITH_RSA,
        }


def _webhook_id(c: ProviderConfig) -> str:
    webhook_id = c.string_option("webhook_id")
    if not webhook_id:
        raise ValueError(
            f"{c.name}: option 'webhook_id' (the webhook's id in PayPal's dashboard, part of"
            " what is signed) is required"
        )
    return webhook_id


def _verifier(c: ProviderConfig) -> PayPalVerifier:
    c.allow_options("webhook_id")
    if not isinstance(c.public_keys, Mapping) or not c.public_keys:
        raise ValueError(
            f"{c.name}: public_keys must be a table of certificate id (CERT-..., the last"
            " segment of PAYPAL-CERT-URL) -> the PEM certificate downloaded from that URL"
        )
    try:
        certificates = {cid: load_rsa_public_key(pem) for cid, pem in c.public_keys.items()}
    except ValueError as exc:
        raise ValueError(f"{c.name}: {exc}") from exc
    return PayPalVerifier(certificates, _webhook_id(c), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> PayPalSigner:
    c.allow_options("webhook_id", "cert_id")
    cert_id = c.string_option("cert_id")
    if not cert_id:
        raise ValueError(f"{c.name}: option 'cert_id' (the certificate to sign as) is required")
    try:
        key = load_rsa_private_key(c.require_private_key())
    except ValueError as exc:
        raise ValueError(f"{c.name}: {exc}") from exc
    return PayPalSigner(key, cert_id, _webhook_id(c))


# `cert_id` (the certificate `inbox send` signs as) only signs.
_VERIFIER_OPTIONS, _SIGNER_OPTIONS = signing_key_id_options("cert_id")


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "event_version": "1.0",
        "create_time": iso_time(s.now).replace("+00:00", "Z"),
        "resource_type": "capture",
        "resource_version": "2.0",
        "summary": "Payment completed for $ 10.0 USD",
        "resource": {
            "id": "42311647XV020574X",
            "status": "COMPLETED",
            "amount": {"currency_code": "USD", "value": "10.00"},
        },
    }


PROVIDER = Provider(
    name="paypal",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="PayPal",
        family="payments",
        signs="SHA256withRSA (PAYPAL-TRANSMISSION-SIG) of transmission id|time|webhook id|CRC32"
        " of the body; certificate by PAYPAL-CERT-URL",
        unsigned="PAYPAL-CERT-URL (checked: PayPal's host; its certificate is fetched and its"
        " chain checked by the operator, which needs the network)",
        proof="docs-only",
        proof_source="https://developer.paypal.com/api/rest/webhooks/rest/",
        window_source="none documented (PayPal's webhook verification; each retry is signed anew)",
        retries="a new transmission (id, time, signature) of the same body: the event id, the key,"
        " stays",
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/event_type"),
    sample=_sample,
    new_id=lambda: "WH-" + uuid.uuid4().hex[:17].upper(),
    sample_type="PAYMENT.CAPTURE.COMPLETED",
    verifier_options=_VERIFIER_OPTIONS,
    signer_options=_SIGNER_OPTIONS,
)
