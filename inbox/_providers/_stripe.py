"""Stripe: ``Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]``, HMAC-SHA256 over ``{t}.{body}``.

The ``whsec_...`` endpoint secret is the HMAC key *as UTF-8 text, prefix included*. It looks
like the base64 secrets of Standard Webhooks, and stripping the prefix or base64-decoding it
is a classic bug that rejects every genuine event.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__ = ["StripeSigner", "StripeVerifier"]


def _parse_header(value: str) -> tuple[str, list[str]]:
    """Return the ``t`` value and every ``v1`` signature; other schemes (v0) are ignored."""
    timestamp: str | None = None
    signatures: list[str] = []
    for item in value.split(","):
        key, sep, val = item.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            timestamp = val
        elif key == "v1":
            signatures.append(val)
    if timestamp is None:
        raise VerificationError("malformed_header")
    return timestamp, signatures


def _hex_hmac(secret: str, timestamp: str, body: bytes) -> bytes:
    content = timestamp.encode("ascii") + b"." + body
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest().encode("ascii")


@dataclass(frozen=True, slots=True)
class StripeVerifier:
    """Any ``v1`` signature matching any configured secret passes (rotation)."""

    secrets: Sequence[str]
    tolerance_seconds: int
    name: str = field(default="stripe")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the header's shape, the timestamp, then the signatures."""
        timestamp, signatures = _parse_header(require_header(request, "stripe-signature"))
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        if not signatures:
            raise VerificationError("no_supported_signature")
        received = [s.lower().encode("ascii", "replace") for s in signatures]
        require_match((_hex_hmac(s, timestamp, request.body) for s in self.secrets), *received)


@dataclass(frozen=True, slots=True)
class StripeSigner:
    """Signs like Stripe: one ``v1`` entry per secret."""

    secrets: Sequence[str]

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the ``stripe-signature`` header (the event id lives in the body)."""
        timestamp = str(int(now))
        parts = [f"t={timestamp}"]
        parts += [f"v1={_hex_hmac(s, timestamp, body).decode()}" for s in self.secrets]
        return {"stripe-signature": ",".join(parts)}


def _verifier(c: ProviderConfig) -> StripeVerifier:
    c.allow_options()
    return StripeVerifier(c.require_secrets(), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> StripeSigner:
    c.allow_options()
    return StripeSigner(c.require_secrets())


def _sample(s: Sample) -> dict[str, Any]:
    # Stripe's object is the one the type is about: an invoice for `invoice.*`. Its id is
    # what an ordered source keys on (ordering_key = "json:/data/object/id").
    data: dict[str, Any] = (
        {
            "id": "in_sample",
            "object": "invoice",
            "amount_due": 100,
            "amount_paid": 100,
            "currency": "usd",
        }
        if s.event_type.startswith("invoice.")
        else {"id": "pi_sample", "object": "payment_intent", "amount": 100, "currency": "usd"}
    )
    return {"object": "event", "created": int(s.now), "livemode": False, "data": {"object": data}}


PROVIDER = Provider(
    name="stripe",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Stripe",
        signs="HMAC-SHA256 hex of `{t}.{body}` (Stripe-Signature t=, v1=)",
        unsigned="nothing: the event id and type are in the signed body",
        proof="docs-only",
        proof_source="https://docs.stripe.com/webhooks#verify-manually",
        tolerance_seconds=300,
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "evt_" + uuid.uuid4().hex,
    sample_type="payment_intent.succeeded",
    dev_secret=dev_token("whsec_"),
)
