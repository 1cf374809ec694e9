"""Atlassian Jira Cloud: ``X-Hub-Signature: sha256=<hex>``, HMAC-SHA256 of the raw body under
the secret given when the webhook was registered (the admin screen or the REST API); a
webhook registered without a secret is signed by nothing, and cannot be verified.

No timestamp is signed, nor the delivery id (``X-Atlassian-Webhook-Identifier``, the same on
every retry of one delivery: the key) or ``X-Atlassian-Webhook-Retry``: as with Bitbucket, a
delivery re-sent under a new identifier is a new event unless the source keys on
``body-sha256``. The type is the signed body's ``webhookEvent`` (``jira:issue_created``).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._bitbucket import HUB_SHA256
from ._hmac_recipe import recipe_signer, recipe_verifier
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__: list[str] = []


# Bitbucket's signature, Atlassian's other product: its recipe under Jira's name.
def _verifier(c: ProviderConfig) -> Verifier:
    return recipe_verifier(c, HUB_SHA256)


def _signer(c: ProviderConfig) -> Signer:
    return recipe_signer(c, HUB_SHA256)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "timestamp": int(s.now * 1000),
        "issue_event_type_name": "issue_created",
        "user": {"accountId": "5b10a2844c20165700ede21g", "displayName": "inbox send"},
        "issue": {"id": "10001", "key": "INBOX-1", "fields": {"summary": "hello from inbox send"}},
    }


def _envelope(_s: Sample) -> dict[str, str]:
    return {"x-atlassian-webhook-retry": "0"}


PROVIDER = Provider(
    name="jira",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Atlassian Jira Cloud",
        family="developer-tools",
        signs="HMAC-SHA256 hex of the body (X-Hub-Signature: sha256=), for a webhook with a secret",
        unsigned="X-Atlassian-Webhook-Identifier (the key) and -Retry; no timestamp",
        proof="docs-only",
        proof_source="https://developer.atlassian.com/cloud/jira/platform/webhooks/",
        retries="the same X-Atlassian-Webhook-Identifier (the key) on every retry of one delivery;"
        " X-Atlassian-Webhook-Retry counts them",
    ),
    key_specs=specs("header:x-atlassian-webhook-identifier"),
    type_specs=specs("json:/webhookEvent"),
    sample=_sample,
    envelope=_envelope,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="jira:issue_created",
    dev_secret=dev_token(),
)
