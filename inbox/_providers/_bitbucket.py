"""Bitbucket (Cloud, and Data Center): ``X-Hub-Signature: sha256=<hex>``, HMAC-SHA256 of the
raw body under the webhook's secret.

No timestamp is signed, nor the delivery id (Cloud's ``X-Request-UUID``, Data Center's
``X-Request-Id``, the key) or the event (``X-Event-Key``, the type): as with GitHub, a
delivery re-sent under a new id is a new event unless the source keys on ``body-sha256``.
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__ = ["HUB_SHA256"]

# Jira Cloud signs the same way.
HUB_SHA256 = parse_recipe({"header": "X-Hub-Signature", "prefix": "sha256="})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, HUB_SHA256)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, HUB_SHA256)


def _sample(_s: Sample) -> dict[str, Any]:
    return {
        "repository": {"full_name": "acme/inbox", "type": "repository"},
        "actor": {"display_name": "inbox send"},
        "push": {"changes": []},
    }


def _envelope(_s: Sample) -> dict[str, str]:
    return {"x-hook-uuid": str(uuid.uuid4())}


PROVIDER = Provider(
    name="bitbucket",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Bitbucket",
        family="developer-tools",
        signs="HMAC-SHA256 hex of the body (X-Hub-Signature: sha256=)",
        unsigned="X-Request-UUID / X-Request-Id (the key) and X-Event-Key (the type); no timestamp",
        proof="docs-only",
        proof_source="https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/",
    ),
    key_specs=specs("header:x-request-uuid", "header:x-request-id"),
    type_specs=specs("header:x-event-key"),
    sample=_sample,
    envelope=_envelope,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="repo:push",
    dev_secret=dev_token(),
)
