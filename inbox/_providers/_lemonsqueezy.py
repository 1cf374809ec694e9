"""Lemon Squeezy: ``X-Signature``, HMAC-SHA256 hex of the raw body under the signing secret.

Lemon Squeezy sends no delivery id and signs no timestamp: the key is the body's hash (a
retry carries the same bytes), the type the body's ``meta.event_name`` (also sent, unsigned,
as ``X-Event-Name``).
"""

from __future__ import annotations

from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "X-Signature"})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    # The delivery's own id as the object's: two sends are two bodies, so two events.
    return {
        "meta": {"test_mode": True},
        "data": {
            "type": "orders",
            "id": s.msg_id,
            "attributes": {"total": 100, "currency": "USD", "created_at": iso_time(s.now)},
        },
    }


PROVIDER = Provider(
    name="lemonsqueezy",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Lemon Squeezy",
        family="payments",
        signs="HMAC-SHA256 hex of the body (X-Signature)",
        unsigned="X-Event-Name (its twin meta.event_name is signed); no id, no timestamp",
        proof="docs-only",
        proof_source="https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/meta/event_name"),
    sample=_sample,
    sample_type="order_created",
    dev_secret=dev_token(),
)
