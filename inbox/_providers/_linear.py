"""Linear: ``Linear-Signature``, HMAC-SHA256 hex of the raw body under the webhook's secret.

The time is inside the signed body, ``webhookTimestamp`` in Unix milliseconds; Linear's docs
reject a delivery more than a minute from the clock. ``Linear-Delivery`` (the key) is not
signed, nor ``Linear-Event``; the type is the signed body's ``type`` (``Issue``, ...), whose
``action`` says what happened to it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import Signer, WebhookRequest, check_timestamp
from ._hmac_recipe import HmacRecipeVerifier, parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__ = ["LinearVerifier"]

_RECIPE = parse_recipe({"header": "Linear-Signature"})


def _body_seconds(body: bytes) -> str:
    """The signed ``webhookTimestamp`` (milliseconds) as whole seconds, digits only."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise VerificationError("malformed_body") from None
    millis = document.get("webhookTimestamp") if isinstance(document, dict) else None
    if isinstance(millis, bool) or not isinstance(millis, int) or millis < 0:
        raise VerificationError("malformed_body")
    return str(millis // 1000)


@dataclass(frozen=True, slots=True)
class LinearVerifier:
    """The body's HMAC first (the time is read from signed bytes only), then the time."""

    signature: HmacRecipeVerifier
    tolerance_seconds: int
    name: str = field(default="linear")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the signature, then the body's ``webhookTimestamp``."""
        self.signature.verify(request, now=now)
        seconds = _body_seconds(request.body)
        check_timestamp(seconds, now=now, tolerance_seconds=self.tolerance_seconds)


def _verifier(c: ProviderConfig) -> LinearVerifier:
    return LinearVerifier(recipe_verifier(c, _RECIPE), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "action": "create",
        "data": {"id": str(uuid.uuid4()), "title": "hello from inbox send"},
        "url": "https://linear.app/acme/issue/INB-1",
        "webhookTimestamp": int(s.now * 1000),
    }


def _envelope(s: Sample) -> dict[str, str]:
    return {"linear-event": s.event_type}


PROVIDER = Provider(
    name="linear",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Linear",
        family="developer-tools",
        signs="HMAC-SHA256 hex of the body (Linear-Signature); the time is the body's",
        unsigned="Linear-Delivery (the key) and Linear-Event; webhookTimestamp is signed",
        proof="docs-only",
        proof_source="https://linear.app/developers/webhooks",
        tolerance_seconds=60,
        window_source="https://linear.app/developers/webhooks (within a minute)",
        retries="signed anew with a fresh webhookTimestamp (the SDK's 60 s window would refuse it"
        " otherwise); the docs do not say whether Linear-Delivery, the key, stays. The"
        " Linear-Timestamp header the SDK prefers is not signed: the body's time is checked",
    ),
    key_specs=specs("header:linear-delivery"),
    type_specs=specs("json:/type"),
    sample=_sample,
    envelope=_envelope,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="Issue",
    dev_secret=dev_token("lin_wh_"),
)
