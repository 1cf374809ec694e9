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

__all__ = ["STRIPE", "SignedTimeLayout", "StripeSigner", "StripeVerifier"]


@dataclass(frozen=True, slots=True)
class SignedTimeLayout:
    """How a header of a timestamp and hex signatures is spelt: Stripe's ``t=..,v1=..`` over
    ``{t}.{body}``, or Paddle's ``ts=..;h1=..`` over ``{ts}:{body}``."""

    header: str
    separator: str
    timestamp_key: str
    signature_key: str
    joiner: bytes  # between the timestamp and the body in the signed content

    def parse(self, value: str) -> tuple[str, list[str]]:
        """The timestamp and every signature of our version; other entries are ignored."""
        timestamp: str | None = None
        signatures: list[str] = []
        for item in value.split(self.separator):
            key, sep, val = item.strip().partition("=")
            if not sep:
                continue
            if key == self.timestamp_key:
                timestamp = val
            elif key == self.signature_key:
                signatures.append(val)
        if timestamp is None:
            raise VerificationError("malformed_header")
        return timestamp, signatures

    def hex_hmac(self, secret: str, timestamp: str, body: bytes) -> bytes:
        content = timestamp.encode("ascii") + self.joiner + body
        return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest().encode("ascii")


STRIPE = SignedTimeLayout("stripe-signature", ",", "t", "v1", b".")


@dataclass(frozen=True, slots=True)
class StripeVerifier:
    """Any ``v1`` signature matching any configured secret passes (rotation)."""

    secrets: Sequence[str]
    tolerance_seconds: int
    layout: SignedTimeLayout = STRIPE
    name: str = field(default="stripe")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the header's shape, the timestamp, then the signatures."""
        layout = self.layout
        timestamp, signatures = layout.parse(require_header(request, layout.header))
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        if not signatures:
            raise VerificationError("no_supported_signature")
        received = [s.lower().encode("ascii", "replace") for s in signatures]
        expected = (layout.hex_hmac(s, timestamp, request.body) for s in self.secrets)
        require_match(expected, *received)


@dataclass(frozen=True, slots=True)
class StripeSigner:
    """Signs like Stripe: one ``v1`` entry per secret."""

    secrets: Sequence[str]
    layout: SignedTimeLayout = STRIPE

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature header (the event id lives in the body)."""
        layout, timestamp = self.layout, str(int(now))
        parts = [f"{layout.timestamp_key}={timestamp}"]
        parts += [
            f"{layout.signature_key}={layout.hex_hmac(s, timestamp, body).decode()}"
            for s in self.secrets
        ]
        return {layout.header: layout.separator.join(parts)}


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
        family="payments",
        signs="HMAC-SHA256 hex of `{t}.{body}` (Stripe-Signature t=, v1=)",
        unsigned="nothing: the event id and type are in the signed body",
        proof="docs-only",
        proof_source="https://docs.stripe.com/webhooks#verify-manually",
        tolerance_seconds=300,
        window_source="https://docs.stripe.com/webhooks#replay-attacks"
        " (its libraries' five minutes)",
        retries="the same event (its id, the key), signed anew with a new timestamp",
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "evt_" + uuid.uuid4().hex,
    sample_type="payment_intent.succeeded",
    dev_secret=dev_token("whsec_"),
)
