"""Mailgun: the body's ``signature`` object, ``{"timestamp", "token", "signature"}``, where
``signature`` is HMAC-SHA256 hex of ``{timestamp}{token}`` under the HTTP webhook signing key.

The event itself (``event-data``) is not signed: whoever captures one delivery can send any
event with its signature. Mailgun's docs say to refuse a stale timestamp and a token seen
before; the key is that signed ``token``, so a captured signature sent again is a duplicate,
whatever body it carries. Mailgun documents no window: the default one applies. The type is
``event-data.event`` (``delivered``, ...). A subaccount's delivery also carries ``parent-
signature``, the same HMAC under the primary account's key: either verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__ = ["MailgunSigner", "MailgunVerifier"]


def _hex(key: str, timestamp: str, token: str) -> bytes:
    content = (timestamp + token).encode()
    return hmac.new(key.encode(), content, hashlib.sha256).hexdigest().encode()


def _signature_object(body: bytes) -> tuple[str, str, list[str]]:
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise VerificationError("malformed_body") from None
    found = document.get("signature") if isinstance(document, dict) else None
    if not isinstance(found, dict):
        raise VerificationError("missing_signature")
    values = (found.get("timestamp"), found.get("token"), found.get("signature"))
    if not all(isinstance(v, str) and v for v in values):
        raise VerificationError("malformed_signature")
    timestamp, token, signature = (str(v) for v in values)
    parent = found.get("parent-signature")
    return timestamp, token, [signature, *([parent] if isinstance(parent, str) else [])]


@dataclass(frozen=True, slots=True)
class MailgunVerifier:
    """Any signing key matching passes (rotation)."""

    secrets: Sequence[str]
    tolerance_seconds: int
    name: str = field(default="mailgun")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the timestamp, then the HMAC of timestamp and token under each key."""
        timestamp, token, signatures = _signature_object(request.body)
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        received = [s.lower().encode("ascii", "replace") for s in signatures]
        require_match((_hex(k, timestamp, token) for k in self.secrets), *received)


@dataclass(frozen=True, slots=True)
class MailgunSigner:
    """Writes the ``signature`` object into the body, as Mailgun does; the token is the
    body's when it has one (``inbox send`` puts the key there), else the delivery id."""

    secret: str

    def sign_body(self, *, body: bytes, url: str, now: float, msg_id: str) -> bytes:
        """Return the body with its ``signature`` object."""
        document = json.loads(body)
        given = document.get("signature")
        token = given.get("token") if isinstance(given, dict) else None
        token = token if isinstance(token, str) and token else msg_id
        timestamp = str(int(now))
        signed = {
            "timestamp": timestamp,
            "token": token,
            "signature": _hex(self.secret, timestamp, token).decode(),
        }
        return json.dumps({**document, "signature": signed}, separators=(",", ":")).encode()

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Mailgun adds no header: the signature is in the body."""
        return {}


def _verifier(c: ProviderConfig) -> MailgunVerifier:
    c.allow_options()
    return MailgunVerifier(c.require_secrets(), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> MailgunSigner:
    c.allow_options()
    return MailgunSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "event-data": {
            "id": uuid.uuid4().hex[:22],
            "timestamp": s.now,
            "recipient": "delivered@example.com",
            "message": {"headers": {"message-id": f"{uuid.uuid4().hex}@inbox-send.example"}},
        }
    }


PROVIDER = Provider(
    name="mailgun",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Mailgun",
        family="messaging",
        signs="HMAC-SHA256 hex of `{timestamp}{token}`, in the body's signature object",
        unsigned="event-data, the event itself: the signed token (the key) stops its replay",
        proof="docs-only",
        proof_source="https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
        window_source='none documented (Mailgun\'s Securing webhooks: "not too far" from now)',
    ),
    key_specs=specs("json:/signature/token"),
    type_specs=specs("json:/event-data/event"),
    sample=_sample,
    new_id=lambda: secrets.token_hex(25),
    sample_type="delivered",
    dev_secret=dev_token("key-"),
)
