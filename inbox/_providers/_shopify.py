"""Shopify: ``X-Shopify-Hmac-Sha256: <base64>``, HMAC-SHA256 over the raw body.

The base64 value is decoded and compared as bytes, so the comparison is not fooled (or
failed) by how the sender padded it. Shopify Events deliveries sign the same way but name
their headers without the ``X-`` prefix (``Shopify-Hmac-Sha256``, ``Shopify-Event-Id``); they
may send the prefixed twins too, and Shopify's own library reads the unprefixed one first.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, digests_equal, require_header

__all__ = ["ShopifySigner", "ShopifyVerifier"]


def _digest(secret: str, body: bytes) -> bytes:
    return hmac.new(secret.encode(), body, hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class ShopifyVerifier:
    """Any configured secret matching passes (the app secret is rotated by adding one)."""

    secrets: Sequence[str]
    name: str = field(default="shopify")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare the decoded header with the HMAC of the body under each secret."""
        try:
            header = require_header(request, "shopify-hmac-sha256", "x-shopify-hmac-sha256")
            received = b64decode_lenient(header)
        except ValueError:
            raise VerificationError("malformed_header") from None
        matched = False
        for secret in self.secrets:
            matched |= digests_equal(_digest(secret, request.body), received)
        if not matched:
            raise VerificationError("bad_signature")


@dataclass(frozen=True, slots=True)
class ShopifySigner:
    """Signs like Shopify, adding the webhook id Shopify uses for de-duplication."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the HMAC header and ``x-shopify-webhook-id``."""
        return {
            "x-shopify-hmac-sha256": base64.b64encode(_digest(self.secret, body)).decode(),
            "x-shopify-webhook-id": msg_id,
        }
