"""Vercel: ``x-vercel-signature``, HMAC-SHA1 hex of the raw body under the webhook's secret
(an integration's webhooks: its client secret).

No timestamp is signed. The key is the signed body's ``id``, the type its ``type``
(``deployment.succeeded``, ...).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "x-vercel-signature", "algorithm": "sha1"})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "createdAt": int(s.now * 1000),
        "region": "iad1",
        "payload": {"deployment": {"id": "dpl_sample", "url": "inbox-send.vercel.app"}},
    }


PROVIDER = Provider(
    name="vercel",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Vercel",
        family="developer-tools",
        signs="HMAC-SHA1 hex of the body (x-vercel-signature)",
        unsigned="nothing: id and type are in the signed body; no timestamp",
        proof="docs-only",
        proof_source="https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "evt_" + uuid.uuid4().hex[:24],
    sample_type="deployment.succeeded",
    dev_secret=dev_token(),
)
