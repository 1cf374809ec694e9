"""Coinbase Commerce: ``X-CC-Webhook-Signature``, HMAC-SHA256 hex of the raw body under the
endpoint's shared secret.

No timestamp is signed; the key is the signed body's ``event.id`` and the type its
``event.type`` (``charge:confirmed``, ...).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "X-CC-Webhook-Signature"})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    charge = {"code": "SAMPLE01", "pricing": {"local": {"amount": "1.00", "currency": "USD"}}}
    return {
        "id": 1,
        "scheduled_for": iso_time(s.now),
        "event": {"api_version": "2018-03-22", "created_at": iso_time(s.now), "data": charge},
    }


PROVIDER = Provider(
    name="coinbase-commerce",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Coinbase Commerce",
        family="payments",
        signs="HMAC-SHA256 hex of the body (X-CC-Webhook-Signature)",
        unsigned="nothing: event.id and event.type are in the signed body; no timestamp",
        proof="docs-only",
        proof_source="https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security",
    ),
    key_specs=specs("json:/event/id"),
    type_specs=specs("json:/event/type"),
    sample=_sample,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="charge:confirmed",
    dev_secret=dev_token(),
)
