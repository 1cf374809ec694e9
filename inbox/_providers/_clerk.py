"""Clerk: Standard Webhooks delivered through Svix, under the ``svix-*`` header names.

As Resend's: a base64 ``whsec_`` secret, ``svix-id`` signed with the body (the key), the
type in the body (``user.created``, ...).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._provider import About, Provider, ProviderConfig, Sample, specs
from ._standard_webhooks import dev_whsec, svix_signer, svix_verifier

__all__: list[str] = []


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "object": "event",
        "timestamp": int(s.now * 1000),  # Clerk's are milliseconds
        "instance_id": "ins_sample",
        "data": {"id": "user_sample", "object": "user", "first_name": "Inbox"},
    }


def _verifier(c: ProviderConfig) -> Verifier:
    return svix_verifier(c)


def _signer(c: ProviderConfig) -> Signer:
    return svix_signer(c)


PROVIDER = Provider(
    name="clerk",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Clerk",
        family="generic",
        signs="HMAC-SHA256 base64 of `{svix-id}.{svix-timestamp}.{body}` (Svix)",
        unsigned="nothing: the id and timestamp are signed; the type is in the body",
        proof="sdk-both-ways",
        proof_source="svix (what Clerk's docs verify with)",
        tolerance_seconds=300,
        window_source="svix (Webhook.verify's five minutes)",
    ),
    key_specs=specs("header:svix-id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "msg_" + uuid.uuid4().hex,
    sample_type="user.created",
    dev_secret=dev_whsec,
)
