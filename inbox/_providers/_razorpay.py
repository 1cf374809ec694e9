"""Razorpay: ``X-Razorpay-Signature``, HMAC-SHA256 hex of the raw body under the webhook
secret.

No timestamp is signed, nor ``X-Razorpay-Event-Id``, the id Razorpay documents for
deduplication (the key); the type is the body's ``event``.
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "X-Razorpay-Signature"})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    payment = {"id": "pay_sample", "entity": "payment", "amount": 100, "currency": "INR"}
    return {
        "entity": "event",
        "account_id": "acc_sample",
        "contains": ["payment"],
        "payload": {"payment": {"entity": payment}},
        "created_at": int(s.now),
    }


PROVIDER = Provider(
    name="razorpay",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Razorpay",
        family="payments",
        signs="HMAC-SHA256 hex of the body (X-Razorpay-Signature)",
        unsigned="X-Razorpay-Event-Id (the key); no timestamp",
        proof="sdk-verifies",
        proof_source="razorpay (Utility.verify_webhook_signature)",
    ),
    key_specs=specs("header:x-razorpay-event-id"),
    type_specs=specs("json:/event"),
    sample=_sample,
    new_id=lambda: "evt_" + uuid.uuid4().hex[:14],
    sample_type="payment.captured",
    dev_secret=dev_token(),
)
