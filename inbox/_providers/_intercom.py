"""Intercom: ``X-Hub-Signature: sha1=<hex>``, HMAC-SHA1 of the raw body under the app's
client secret.

No timestamp is signed. The key is the signed body's notification ``id``, the type its
``topic`` (``conversation.user.created``, ...).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "X-Hub-Signature", "algorithm": "sha1", "prefix": "sha1="})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "type": "notification_event",
        "app_id": "inbox_send",
        "data": {"type": "notification_event_data", "item": {"type": "ping"}},
        "delivery_attempts": 1,
        "created_at": int(s.now),
    }


PROVIDER = Provider(
    name="intercom",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Intercom",
        family="business-apps",
        signs="HMAC-SHA1 hex of the body (X-Hub-Signature: sha1=)",
        unsigned="nothing: the notification id and topic are in the signed body; no timestamp",
        proof="docs-only",
        proof_source="https://developers.intercom.com/docs/references/webhooks/webhook-models",
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/topic"),
    sample=_sample,
    new_id=lambda: "notif_" + str(uuid.uuid4()),
    sample_type="ping",
    dev_secret=dev_token(),
)
