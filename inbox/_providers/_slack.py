"""Slack: ``X-Slack-Signature: v0=<hex>`` over ``v0:{X-Slack-Request-Timestamp}:{body}``.

Zoom signs the same way under other header names (``V0Headers``), so its module builds
these classes in its layout.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__ = ["SLACK", "SlackSigner", "SlackVerifier", "V0Headers", "v0_hex_hmac"]

_VERSION = "v0"


@dataclass(frozen=True, slots=True)
class V0Headers:
    """Where a ``v0`` scheme puts its timestamp and its signature."""

    timestamp: str
    signature: str


SLACK = V0Headers("x-slack-request-timestamp", "x-slack-signature")


def v0_hex_hmac(secret: str, timestamp: str, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``v0:{timestamp}:{body}``."""
    content = f"{_VERSION}:{timestamp}:".encode() + body
    return hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class SlackVerifier:
    """Checks the timestamp window first: Slack's docs call it the replay defence."""

    secrets: Sequence[str]
    tolerance_seconds: int
    headers: V0Headers = SLACK
    name: str = field(default="slack")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the timestamp, the signature version, then the HMAC under each secret."""
        timestamp = require_header(request, self.headers.timestamp)
        header = require_header(request, self.headers.signature)
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        version, sep, signature = header.partition("=")
        if not sep:
            raise VerificationError("malformed_header")
        if version != _VERSION:
            raise VerificationError("no_supported_signature")
        received = signature.lower().encode("ascii", "replace")
        expected = (v0_hex_hmac(s, timestamp, request.body).encode() for s in self.secrets)
        require_match(expected, received)


@dataclass(frozen=True, slots=True)
class SlackSigner:
    """Signs like Slack with one signing secret."""

    secret: str
    headers: V0Headers = SLACK

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature and timestamp headers."""
        timestamp = str(int(now))
        return {
            self.headers.timestamp: timestamp,
            self.headers.signature: f"{_VERSION}={v0_hex_hmac(self.secret, timestamp, body)}",
        }


def _verifier(c: ProviderConfig) -> SlackVerifier:
    c.allow_options()
    return SlackVerifier(c.require_secrets(), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> SlackSigner:
    c.allow_options()
    return SlackSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "type": "event_callback",
        "event_time": int(s.now),
        "event": {"text": "hello from inbox send"},
    }


def _url_verification(request: WebhookRequest, _secrets: Sequence[str]) -> dict[str, Any] | None:
    """Slack sends this signed handshake once, when the URL is configured, and only accepts
    the URL if the challenge comes back."""
    if b"url_verification" not in request.body:
        return None  # every event passes here: parse no body that cannot be one
    try:
        payload = json.loads(request.body)
    except (ValueError, RecursionError):
        return None
    if isinstance(payload, dict) and payload.get("type") == "url_verification":
        challenge = payload.get("challenge")
        return {"challenge": challenge} if isinstance(challenge, str) and challenge else None
    return None


PROVIDER = Provider(
    name="slack",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Slack",
        family="messaging",
        signs="HMAC-SHA256 hex of `v0:{timestamp}:{body}` (X-Slack-Signature: v0=)",
        unsigned="nothing: event_id and the type are in the signed body",
        proof="vectors",
        proof_source="slackapi/python-slack-sdk tests/signature/test_signature_verifier.py",
        tolerance_seconds=300,
        window_source="https://api.slack.com/authentication/verifying-requests-from-slack"
        " (five minutes)",
        handshake="url_verification: the challenge is echoed back, not stored",
    ),
    key_specs=specs("json:/event_id"),
    type_specs=specs("json:/event/type", "json:/type"),
    sample=_sample,
    new_id=lambda: "Ev" + uuid.uuid4().hex,
    sample_type="app_mention",
    handshake=_url_verification,
    dev_secret=dev_token(),
)
