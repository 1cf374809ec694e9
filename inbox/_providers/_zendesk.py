"""Zendesk: ``X-Zendesk-Webhook-Signature``, base64 HMAC-SHA256 of the timestamp header's
text followed by the raw body, under the webhook's signing secret (used as text).

``X-Zendesk-Webhook-Signature-Timestamp`` is ISO 8601 (``2021-07-25T10:00:00Z``), signed
as received; Zendesk documents no window, so the default one applies.
``X-Zendesk-Webhook-Invocation-Id`` (the key) is not signed. The type is the body's
``type`` (``zen:event-type:ticket.created``, ...) for webhooks subscribed to events; a
trigger's or an automation's webhook carries whatever body it was given.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import re
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import (
    WebhookRequest,
    b64decode_lenient,
    check_timestamp,
    require_header,
    require_match,
)
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs

__all__ = ["ZendeskSigner", "ZendeskVerifier"]

_SIGNATURE = "x-zendesk-webhook-signature"
_TIMESTAMP = "x-zendesk-webhook-signature-timestamp"
# What Zendesk sends: UTC to the second, "Z" or an offset; nothing looser.
_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})")


def _digest(secret: str, timestamp: str, body: bytes) -> bytes:
    return hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()


def _unix_seconds(timestamp: str) -> str:
    if not _ISO.fullmatch(timestamp):
        raise VerificationError("malformed_header")
    try:
        moment = datetime.datetime.fromisoformat(timestamp)
    except ValueError:
        raise VerificationError("malformed_header") from None
    return str(int(moment.timestamp()))


@dataclass(frozen=True, slots=True)
class ZendeskVerifier:
    """Any signing secret matching passes (rotation)."""

    secrets: Sequence[str]
    tolerance_seconds: int
    name: str = field(default="zendesk")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the headers, the timestamp, then the HMAC under each secret."""
        encoded = require_header(request, _SIGNATURE)
        timestamp = require_header(request, _TIMESTAMP)
        check_timestamp(_unix_seconds(timestamp), now=now, tolerance_seconds=self.tolerance_seconds)
        try:
            received = b64decode_lenient(encoded)
        except ValueError:
            raise VerificationError("malformed_header") from None
        require_match((_digest(s, timestamp, request.body) for s in self.secrets), received)


@dataclass(frozen=True, slots=True)
class ZendeskSigner:
    """Signs as Zendesk does, with the invocation id it sends along."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature, its timestamp and the invocation id."""
        timestamp = iso_time(now).replace("+00:00", "Z")
        return {
            _SIGNATURE: base64.b64encode(_digest(self.secret, timestamp, body)).decode(),
            _TIMESTAMP: timestamp,
            "x-zendesk-webhook-invocation-id": msg_id,
        }


def _verifier(c: ProviderConfig) -> ZendeskVerifier:
    c.allow_options()
    return ZendeskVerifier(c.require_secrets(), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> ZendeskSigner:
    c.allow_options()
    return ZendeskSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "account_id": 1,
        "id": str(uuid.uuid4()),
        "time": iso_time(s.now).replace("+00:00", "Z"),
        "zendesk_event_version": "2022-11-06",
        "subject": "zen:ticket:1",
        "detail": {"id": "1", "subject": "hello from inbox send"},
    }


PROVIDER = Provider(
    name="zendesk",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Zendesk",
        family="business-apps",
        signs="HMAC-SHA256 base64 of `{timestamp}{body}` (X-Zendesk-Webhook-Signature)",
        unsigned="X-Zendesk-Webhook-Invocation-Id (the key); no documented window",
        proof="docs-only",
        proof_source="https://developer.zendesk.com/documentation/webhooks/verifying/",
        window_source="none documented (Zendesk's Verifying webhook authenticity)",
    ),
    key_specs=specs("header:x-zendesk-webhook-invocation-id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: str(10**11 + secrets.randbelow(9 * 10**11)),  # numeric, as Zendesk's
    sample_type="zen:event-type:ticket.created",
    dev_secret=dev_token(),
)
