"""Shopify: ``X-Shopify-Hmac-Sha256: <base64>``, HMAC-SHA256 over the raw body.

The base64 value is decoded and compared as bytes, so the comparison is not fooled (or
failed) by how the sender padded it. Shopify Events deliveries sign the same way but name
their headers without the ``X-`` prefix (``Shopify-Hmac-Sha256``, ``Shopify-Event-Id``); they
may send the prefixed twins too, and Shopify's own library reads the unprefixed one first.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

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
        require_match((_digest(s, request.body) for s in self.secrets), received)


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


def _verifier(c: ProviderConfig) -> ShopifyVerifier:
    c.allow_options()
    return ShopifyVerifier(c.require_secrets())


def _signer(c: ProviderConfig) -> ShopifySigner:
    c.allow_options()
    return ShopifySigner(c.require_secrets()[0])


# Shopify's own library (@shopify/shopify-api) refuses a delivery without the shop domain and
# the API version; a sample names a shop that cannot exist and a released version.
_SHOP_DOMAIN = "inbox-send.myshopify.com"
_API_VERSION = "2026-04"


def _sample(s: Sample) -> dict[str, Any]:
    return {"id": int(s.now), "note": "sent by inbox send"}


def _envelope(s: Sample) -> dict[str, str]:
    moment = datetime.datetime.fromtimestamp(s.now, datetime.UTC)
    return {
        "x-shopify-topic": s.event_type,
        "x-shopify-shop-domain": _SHOP_DOMAIN,
        "x-shopify-api-version": _API_VERSION,
        "x-shopify-triggered-at": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "x-shopify-event-id": s.msg_id,
        "x-shopify-webhook-id": s.msg_id,
    }


PROVIDER = Provider(
    name="shopify",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Shopify",
        family="business-apps",
        signs="HMAC-SHA256 base64 of the body (X-Shopify-Hmac-Sha256)",
        unsigned="X-Shopify-Event-Id or -Webhook-Id (the key), X-Shopify-Topic; no timestamp",
        proof="docs-only",
        proof_source="https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook",
    ),
    # Shopify Events send the same headers without the X- prefix.
    key_specs=specs(
        "header:x-shopify-event-id",
        "header:shopify-event-id",
        "header:x-shopify-webhook-id",
        "header:shopify-webhook-id",
    ),
    type_specs=specs("header:x-shopify-topic", "header:shopify-topic"),
    sample=_sample,
    envelope=_envelope,
    new_id=lambda: str(uuid.uuid4()),  # Shopify's ids are UUIDs in their usual spelling
    sample_type="orders/create",
    dev_secret=dev_token(),
)
