"""Twitch EventSub over webhooks: ``Twitch-Eventsub-Message-Signature: sha256=<hex>``,
HMAC-SHA256 of ``{message id}{message timestamp}{body}`` under the subscription's secret.

The id and the timestamp (RFC 3339, nanoseconds) are signed headers; Twitch documents a
ten-minute window, the verifier's unless the source sets ``tolerance_seconds``. The key is the
message id, the type the subscription type header; a ``revocation`` message is stored too,
under its subscription's type (its ``Twitch-Eventsub-Message-Type`` header says which it is).
``webhook_callback_verification``, sent signed when a subscription is created, is answered with
its challenge verbatim as text/plain, and not stored.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs

__all__ = ["TwitchSigner", "TwitchVerifier"]

_ID = "twitch-eventsub-message-id"
_TIMESTAMP = "twitch-eventsub-message-timestamp"
_SIGNATURE = "twitch-eventsub-message-signature"
_TYPE = "twitch-eventsub-message-type"
_PREFIX = "sha256="
_VERIFICATION = "webhook_callback_verification"
# RFC 3339 in UTC as Twitch writes it; the fraction is dropped for the window only.
_RFC3339 = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]{1,9})?Z")


def _hex_hmac(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    content = (msg_id + timestamp).encode() + body
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


def _unix_seconds(timestamp: str) -> str:
    match = _RFC3339.fullmatch(timestamp)
    if match is None:
        raise VerificationError("malformed_header")
    try:
        parsed = datetime.datetime.fromisoformat(match.group(1) + "+00:00")
    except ValueError:
        raise VerificationError("malformed_header") from None
    return str(int(parsed.timestamp()))


@dataclass(frozen=True, slots=True)
class TwitchVerifier:
    """Any secret matching passes (rotation)."""

    secrets: Sequence[str]
    tolerance_seconds: int
    name: str = field(default="twitch")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the timestamp, then the HMAC of id + timestamp + body under each secret."""
        msg_id = require_header(request, _ID)
        timestamp = require_header(request, _TIMESTAMP)
        header = require_header(request, _SIGNATURE)
        check_timestamp(_unix_seconds(timestamp), now=now, tolerance_seconds=self.tolerance_seconds)
        if not header.startswith(_PREFIX):
            raise VerificationError("no_supported_signature")
        received = header[len(_PREFIX) :].lower().encode("ascii", "replace")
        expected = (_hex_hmac(s, msg_id, timestamp, request.body).encode() for s in self.secrets)
        require_match(expected, received)


@dataclass(frozen=True, slots=True)
class TwitchSigner:
    """Signs like Twitch with one subscription secret; ``msg_id`` is the message id."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the id, timestamp and signature headers."""
        moment = datetime.datetime.fromtimestamp(int(now), datetime.UTC)
        timestamp = moment.strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
        return {
            _ID: msg_id,
            _TIMESTAMP: timestamp,
            _SIGNATURE: _PREFIX + _hex_hmac(self.secret, msg_id, timestamp, body),
        }


def _verifier(c: ProviderConfig) -> TwitchVerifier:
    c.allow_options()
    return TwitchVerifier(c.require_secrets(), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> TwitchSigner:
    c.allow_options()
    return TwitchSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "subscription": {
            "id": str(uuid.uuid4()),
            "type": s.event_type,
            "version": "2",
            "status": "enabled",
            "condition": {"broadcaster_user_id": "1337"},
            "transport": {"method": "webhook", "callback": "https://example.com/webhooks"},
            "created_at": iso_time(s.now),
        },
        "event": {"user_name": "inbox_send", "broadcaster_user_id": "1337"},
    }


def _envelope(s: Sample) -> dict[str, str]:
    return {_TYPE: "notification", "twitch-eventsub-subscription-version": "2"}


def _callback_verification(request: WebhookRequest, _secrets: Sequence[str]) -> str | None:
    """Twitch enables a subscription only once its challenge comes back as the whole body."""
    if request.headers.get(_TYPE, "").strip() != _VERIFICATION:
        return None
    try:
        payload = json.loads(request.body)
    except (ValueError, RecursionError):
        return None
    challenge = payload.get("challenge") if isinstance(payload, dict) else None
    return challenge if isinstance(challenge, str) and challenge else None


PROVIDER = Provider(
    name="twitch",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Twitch EventSub",
        family="messaging",
        signs="HMAC-SHA256 hex of `{message id}{timestamp}{body}` (sha256=)",
        unsigned="Twitch-Eventsub-Message-Type and -Subscription-Type headers (also in body)",
        proof="docs-only",
        proof_source="https://dev.twitch.tv/docs/eventsub/handling-webhook-events/",
        tolerance_seconds=600,
        window_source="https://dev.twitch.tv/docs/eventsub/handling-webhook-events"
        " (older than ten minutes)",
        handshake="webhook_callback_verification: the challenge echoed as text/plain, not stored",
    ),
    key_specs=specs(f"header:{_ID}"),
    type_specs=specs("header:twitch-eventsub-subscription-type"),
    sample=_sample,
    envelope=_envelope,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="channel.follow",
    handshake=_callback_verification,
    dev_secret=dev_token(),
)
