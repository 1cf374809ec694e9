"""Sentry (integration platform): ``Sentry-Hook-Signature``, HMAC-SHA256 hex of the raw body
under the integration's client secret.

Sentry sends ``Sentry-Hook-Timestamp`` but does not sign it, nor ``Request-ID`` (the key) or
``Sentry-Hook-Resource`` (the type: ``issue``, ``event_alert``, ...; the body's ``action``
says what happened to it).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._hmac_recipe import parse_recipe, recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__: list[str] = []

_RECIPE = parse_recipe({"header": "Sentry-Hook-Signature"})


def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, _RECIPE)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, _RECIPE)


def _sample(s: Sample) -> dict[str, Any]:
    issue = {"id": str(int(s.now)), "title": "hello from inbox send", "status": "unresolved"}
    return {
        "action": "created",
        "installation": {"uuid": str(uuid.uuid4())},
        "data": {"issue": issue},
        "actor": {"type": "application", "id": "sentry", "name": "Sentry"},
    }


def _envelope(s: Sample) -> dict[str, str]:
    return {"sentry-hook-timestamp": str(int(s.now))}


PROVIDER = Provider(
    name="sentry",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Sentry (integration platform)",
        family="developer-tools",
        signs="HMAC-SHA256 hex of the body (Sentry-Hook-Signature)",
        unsigned="Request-ID (the key), Sentry-Hook-Resource (the type), Sentry-Hook-Timestamp",
        proof="docs-only",
        proof_source="https://docs.sentry.io/integrations/integration-platform/webhooks/",
    ),
    key_specs=specs("header:request-id"),
    type_specs=specs("header:sentry-hook-resource"),
    sample=_sample,
    envelope=_envelope,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="issue",
    dev_secret=dev_token(),
)
