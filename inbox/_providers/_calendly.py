"""Calendly: ``Calendly-Webhook-Signature: t=<unix>,v1=<hex>``, HMAC-SHA256 of ``{t}.{body}``
under the subscription's signing key: Stripe's scheme under another header name.

Calendly's docs check the timestamp within three minutes. A delivery carries no id: the key
is the body's hash (a retry carries the same bytes); the type is the body's ``event``
(``invitee.created``, ...).
"""

from __future__ import annotations

from typing import Any

from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs
from ._stripe import SignedTimeLayout, StripeSigner, StripeVerifier

__all__ = ["CALENDLY"]

CALENDLY = SignedTimeLayout("calendly-webhook-signature", ",", "t", "v1", b".")


def _verifier(c: ProviderConfig) -> StripeVerifier:
    c.allow_options()
    return StripeVerifier(c.require_secrets(), c.tolerance_seconds, CALENDLY, name="calendly")


def _signer(c: ProviderConfig) -> StripeSigner:
    c.allow_options()
    return StripeSigner(c.require_secrets(), CALENDLY)


def _sample(s: Sample) -> dict[str, Any]:
    # The delivery's own id in the invitee's URI: two sends are two bodies, so two events.
    invitee = f"https://api.calendly.com/scheduled_events/SAMPLE/invitees/{s.msg_id}"
    return {
        "created_at": iso_time(s.now),
        "created_by": "https://api.calendly.com/users/SAMPLE",
        "payload": {"uri": invitee, "email": "invitee@example.com", "status": "active"},
    }


PROVIDER = Provider(
    name="calendly",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Calendly",
        family="business-apps",
        signs="HMAC-SHA256 hex of `{t}.{body}` (Calendly-Webhook-Signature t=, v1=)",
        unsigned="nothing: the type is in the signed body; no delivery id (the body's hash)",
        proof="docs-only",
        proof_source="https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures",
        tolerance_seconds=180,
        window_source="https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures"
        " (three minutes)",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/event"),
    sample=_sample,
    sample_type="invitee.created",
    dev_secret=dev_token(),
)
