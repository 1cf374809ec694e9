"""Resend: Standard Webhooks delivered through Svix, under the ``svix-*`` header names.

The ``whsec_`` signing secret is base64 (as Standard Webhooks'); ``svix-id`` is signed with
the body and the timestamp, so it is a safe idempotency key. The type is the body's ``type``
(``email.delivered``, ...).
"""

from __future__ import annotations

import uuid
from typing import Any

from ._base import Signer, Verifier
from ._provider import About, Provider, ProviderConfig, Sample, iso_time, specs
from ._standard_webhooks import dev_whsec, svix_signer, svix_verifier

__all__: list[str] = []


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "created_at": iso_time(s.now),
        "data": {
            "email_id": str(uuid.uuid4()),
            "from": "Acme <onboarding@resend.dev>",
            "to": ["delivered@resend.dev"],
            "subject": "hello from inbox send",
        },
    }


def _verifier(c: ProviderConfig) -> Verifier:
    return svix_verifier(c)


def _signer(c: ProviderConfig) -> Signer:
    return svix_signer(c)


PROVIDER = Provider(
    name="resend",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Resend",
        family="messaging",
        signs="HMAC-SHA256 base64 of `{svix-id}.{svix-timestamp}.{body}` (Svix)",
        unsigned="nothing: the id and timestamp are signed; the type is in the body",
        proof="sdk-both-ways",
        proof_source="svix (what Resend's docs verify with)",
        tolerance_seconds=300,
        window_source="svix (Webhook.verify's five minutes)",
    ),
    key_specs=specs("header:svix-id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "msg_" + uuid.uuid4().hex,
    sample_type="email.delivered",
    dev_secret=dev_whsec,
)
