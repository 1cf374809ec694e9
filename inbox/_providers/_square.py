"""Square: ``x-square-hmacsha256-signature``, base64 HMAC-SHA256 of the notification URL
followed by the raw body, under the subscription's signature key.

The URL is the one registered with Square, which a receiver behind proxies does not see:
the source's ``public_url`` (taken as the ``public_url`` option) replaces the request's URL
when set, and must then be exactly the registered one, query included. No timestamp is
signed; the key is the signed body's ``event_id``, the type its ``type``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, require_header, require_match
from ._provider import (
    About,
    Provider,
    ProviderConfig,
    Sample,
    dev_token,
    iso_time,
    public_url_option,
    specs,
)

__all__ = ["SquareSigner", "SquareVerifier"]

_HEADER = "x-square-hmacsha256-signature"


def _digest(key: str, url: str, body: bytes) -> bytes:
    return hmac.new(key.encode(), url.encode() + body, hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class SquareVerifier:
    """Any signature key matching passes (rotation)."""

    secrets: Sequence[str]
    public_url: str | None = None
    name: str = field(default="square")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare the header with the HMAC of the notification URL and the body."""
        try:
            received = b64decode_lenient(require_header(request, _HEADER))
        except ValueError:
            raise VerificationError("malformed_header") from None
        url = self.public_url or request.url
        require_match((_digest(s, url, request.body) for s in self.secrets), received)


@dataclass(frozen=True, slots=True)
class SquareSigner:
    """Signs for the URL the request is sent to (the source's public URL for ``inbox send``)."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature header."""
        return {_HEADER: base64.b64encode(_digest(self.secret, url, body)).decode()}


def _verifier(c: ProviderConfig) -> SquareVerifier:
    c.allow_options("public_url")
    return SquareVerifier(c.require_secrets(), c.string_option("public_url"))


def _signer(c: ProviderConfig) -> SquareSigner:
    c.allow_options("public_url")  # one options table serves both directions
    return SquareSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    payment = {"id": "sample_payment", "status": "COMPLETED", "created_at": iso_time(s.now)}
    return {
        "merchant_id": "INBOXSEND",
        "created_at": iso_time(s.now),
        "data": {"type": "payment", "id": "sample_payment", "object": {"payment": payment}},
    }


PROVIDER = Provider(
    name="square",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Square",
        family="payments",
        signs="HMAC-SHA256 base64 of the notification URL + body (x-square-hmacsha256-signature)",
        unsigned="nothing: event_id and type are in the signed body; no timestamp",
        proof="sdk-verifies",
        proof_source="squareup (square.utils.webhooks_helper.verify_signature)",
    ),
    key_specs=specs("json:/event_id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="payment.updated",
    verifier_options=public_url_option,
    dev_secret=dev_token(),
)
