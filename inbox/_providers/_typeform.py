"""Typeform: ``Typeform-Signature: sha256=<base64>``, HMAC-SHA256 of the raw body under the
webhook's secret.

No timestamp is signed. The key is the signed body's ``event_id``, the type its
``event_type`` (``form_response``).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "Typeform-Signature", "encoding": "base64", "prefix": "sha256="})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "form_response": {
            "form_id": "inboxsnd",
            "token": uuid.uuid4().hex,
            "submitted_at": iso_time(s.now),
            "answers": [{"type": "text", "text": "hello from inbox send"}],
        }
    }


PROVIDER = Provider(
    name="typeform",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Typeform",
        family="business-apps",
        signs="HMAC-SHA256 base64 of the body (Typeform-Signature: sha256=)",
        unsigned="nothing: event_id and event_type are in the signed body; no timestamp",
        proof="docs-only",
        proof_source="https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
    ),
    key_specs=specs("json:/event_id"),
    type_specs=specs("json:/event_type"),
    sample=_sample,
    new_id=lambda: uuid.uuid4().hex.upper()[:26],
    sample_type="form_response",
    dev_secret=dev_token(),
)
