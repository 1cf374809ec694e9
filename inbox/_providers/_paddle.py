"""Paddle Billing: ``Paddle-Signature: ts=<unix>;h1=<hex>``, HMAC-SHA256 of ``{ts}:{body}``
under the notification destination's secret key (``pdl_ntfset_...``, used as text).

Paddle documents a five-second window (its SDKs' default), so that is the verifier's unless the
source sets ``tolerance_seconds``: a receiver whose clock drifts refuses Paddle's events. The
key is the signed body's ``event_id``, the type its ``event_type``. During a secret rotation
Paddle may send several ``h1`` entries. It is Stripe's scheme spelt otherwise, so it is checked
by Stripe's verifier in Paddle's layout.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Any

from ._provider import About, Provider, ProviderConfig, Sample, iso_time, specs
from ._stripe import SignedTimeLayout, StripeSigner, StripeVerifier

__all__ = ["PADDLE"]


PADDLE = SignedTimeLayout("paddle-signature", ";", "ts", "h1", b":")


def _verifier(c: ProviderConfig) -> StripeVerifier:
    c.allow_options()
    return StripeVerifier(c.require_secrets(), c.tolerance_seconds, PADDLE, name="paddle")


def _signer(c: ProviderConfig) -> StripeSigner:
    c.allow_options()
    return StripeSigner(c.require_secrets(), PADDLE)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "occurred_at": iso_time(s.now),
        "notification_id": "ntf_" + uuid.uuid4().hex[:26],
        "data": {"id": "txn_sample", "status": "completed", "currency_code": "USD"},
    }


PROVIDER = Provider(
    name="paddle",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Paddle Billing",
        family="payments",
        signs="HMAC-SHA256 hex of `{ts}:{body}` (Paddle-Signature ts=;h1=)",
        unsigned="nothing: event_id and event_type are in the signed body",
        proof="sdk-verifies",
        proof_source="paddle-python-sdk (Notifications.Verifier)",
        tolerance_seconds=5,
        window_source="https://developer.paddle.com/webhooks/signature-verification"
        " (the SDKs' five seconds)",
    ),
    key_specs=specs("json:/event_id"),
    type_specs=specs("json:/event_type"),
    sample=_sample,
    new_id=lambda: "evt_" + uuid.uuid4().hex[:26],
    sample_type="transaction.completed",
    dev_secret=lambda: "pdl_ntfset_" + secrets.token_hex(16),
)
