"""SendGrid (Twilio SendGrid's Event Webhook): ECDSA P-256 / SHA-256 of ``{timestamp}{body}``.

``X-Twilio-Email-Event-Webhook-Signature`` is the base64 DER signature and
``X-Twilio-Email-Event-Webhook-Timestamp`` the Unix seconds it covers. The verification key
is shown in SendGrid's Mail Settings as base64 DER without PEM armour; ``public_keys`` takes
it so, or as PEM, several while rotating. SendGrid documents no replay window: the default
one applies. A POST is a JSON array of events, each with its own
``sg_event_id``: the delivery has no id of its own, so the key is the body's hash, and no
one type.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, check_timestamp, require_header
from ._keys import load_ec_private_key
from ._provider import About, Provider, ProviderConfig, Sample, specs

__all__ = ["SendGridSigner", "SendGridVerifier", "load_sendgrid_public_key"]

_SIGNATURE = "x-twilio-email-event-webhook-signature"
_TIMESTAMP = "x-twilio-email-event-webhook-timestamp"
_ECDSA = ec.ECDSA(hashes.SHA256())


def load_sendgrid_public_key(text: str) -> ec.EllipticCurvePublicKey:
    """A key as SendGrid shows it (base64 DER) or as PEM."""
    data = text.strip()
    try:
        if data.startswith("-----BEGIN"):
            key: object = serialization.load_pem_public_key(data.encode("ascii"))
        else:
            key = serialization.load_der_public_key(b64decode_lenient(data))
    except ValueError as exc:
        raise ValueError(f"sendgrid: cannot load the verification key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise ValueError("sendgrid: the verification key is not an elliptic-curve key")
    return key


@dataclass(frozen=True, slots=True)
class SendGridVerifier:
    """Any configured key verifying the signature passes (rotation)."""

    public_keys: Sequence[ec.EllipticCurvePublicKey]
    tolerance_seconds: int
    name: str = field(default="sendgrid")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the headers, the timestamp, then the signature under each key."""
        encoded = require_header(request, _SIGNATURE)
        timestamp = require_header(request, _TIMESTAMP)
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        try:
            signature = b64decode_lenient(encoded)
        except ValueError:
            raise VerificationError("malformed_header") from None
        content = timestamp.encode("ascii") + request.body
        for key in self.public_keys:
            try:
                key.verify(signature, content, _ECDSA)
            except InvalidSignature:
                continue
            return
        raise VerificationError("bad_signature")


@dataclass(frozen=True, slots=True)
class SendGridSigner:
    """Signs as SendGrid does, with a private key whose public half a source verifies."""

    private_key: ec.EllipticCurvePrivateKey

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature and timestamp headers."""
        timestamp = str(int(now))
        signature = self.private_key.sign(timestamp.encode() + body, _ECDSA)
        return {_SIGNATURE: base64.b64encode(signature).decode(), _TIMESTAMP: timestamp}


def _verifier(c: ProviderConfig) -> SendGridVerifier:
    c.allow_options()
    keys = [load_sendgrid_public_key(k) for k in c.key_list()]
    if not keys:
        raise ValueError(f"{c.name}: public_keys needs the Event Webhook's verification key")
    return SendGridVerifier(keys, c.tolerance_seconds)


def _signer(c: ProviderConfig) -> SendGridSigner:
    c.allow_options()
    return SendGridSigner(load_ec_private_key(c.require_private_key()))


def _sample(s: Sample) -> Any:
    # A JSON array, as every Event Webhook POST is; the event's id makes each send new.
    return [
        {
            "email": "delivered@example.com",
            "timestamp": int(s.now),
            "event": s.event_type,
            "sg_event_id": s.msg_id,
            "sg_message_id": uuid.uuid4().hex,
            "smtp-id": f"<{uuid.uuid4().hex}@inbox-send.example>",
        }
    ]


PROVIDER = Provider(
    name="sendgrid",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="SendGrid (Event Webhook)",
        family="messaging",
        signs="ECDSA P-256 SHA-256 of `{timestamp}{body}` (X-Twilio-Email-Event-Webhook-*)",
        unsigned="nothing; no delivery id (a POST is an array of events: the body's hash)",
        proof="sdk-verifies",
        proof_source="sendgrid (sendgrid.helpers.eventwebhook.EventWebhook)",
        window_source="none documented"
        " (SendGrid's Event Webhook security features; its helper checks none)",
    ),
    key_specs=specs("body-sha256"),
    sample=_sample,
    new_id=lambda: base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="),
    sample_type="delivered",
)
