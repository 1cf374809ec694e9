"""HubSpot (signature v3): ``X-HubSpot-Signature-v3``, base64 HMAC-SHA256 of
``{method}{URI}{body}{X-HubSpot-Request-Timestamp}`` under the app's client secret.

The URI is the one HubSpot calls, which a receiver behind proxies does not see: the
source's ``public_url`` (taken as the ``public_url`` option) replaces the request's URL when
set, as Square's. HubSpot decodes a few percent-escapes in it before signing; so does the
verifier. The timestamp is in milliseconds; HubSpot documents a five-minute window.

A delivery is a JSON array of events; ``attemptNumber`` changes on each retry, so the body's
hash is no key: the key is the first event's ``eventId`` and the type its
``subscriptionType`` (a batch is stored as one event, under its first event's id).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
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
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, public_url_option, specs

__all__ = ["HubSpotSigner", "HubSpotVerifier"]

_SIGNATURE = "x-hubspot-signature-v3"
_TIMESTAMP = "x-hubspot-request-timestamp"
# The escapes HubSpot's v3 page lists as decoded in the URI before it is signed.
_DECODED = {
    "%3A": ":", "%2F": "/", "%3F": "?", "%40": "@", "%21": "!", "%24": "$",
    "%27": "'", "%28": "(", "%29": ")", "%2A": "*", "%2C": ",", "%3B": ";",
}  # fmt: skip


def _uri(url: str) -> str:
    for escape, char in _DECODED.items():
        url = url.replace(escape, char).replace(escape.lower(), char)
    return url


def _digest(secret: str, method: str, url: str, body: bytes, timestamp: str) -> bytes:
    content = (method.upper() + _uri(url)).encode() + body + timestamp.encode()
    return hmac.new(secret.encode(), content, hashlib.sha256).digest()


def _seconds(milliseconds: str) -> str:
    raw = milliseconds.strip()
    if not (raw.isascii() and raw.isdigit() and 4 <= len(raw) <= 15):
        raise VerificationError("malformed_header")
    return raw[:-3]


@dataclass(frozen=True, slots=True)
class HubSpotVerifier:
    """Any client secret matching passes (rotation)."""

    secrets: Sequence[str]
    tolerance_seconds: int
    public_url: str | None = None
    name: str = field(default="hubspot")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the timestamp, then the HMAC of method, URI, body and timestamp."""
        timestamp = require_header(request, _TIMESTAMP)
        header = require_header(request, _SIGNATURE)
        check_timestamp(_seconds(timestamp), now=now, tolerance_seconds=self.tolerance_seconds)
        try:
            received = b64decode_lenient(header)
        except ValueError:
            raise VerificationError("malformed_header") from None
        url = self.public_url or request.url
        expected = (_digest(s, request.method, url, request.body, timestamp) for s in self.secrets)
        require_match(expected, received)


@dataclass(frozen=True, slots=True)
class HubSpotSigner:
    """Signs a POST to the URL the request is sent to (the source's public URL)."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the timestamp and signature headers."""
        timestamp = str(int(now * 1000))
        digest = _digest(self.secret, "POST", url, body, timestamp)
        return {_TIMESTAMP: timestamp, _SIGNATURE: base64.b64encode(digest).decode()}


def _verifier(c: ProviderConfig) -> HubSpotVerifier:
    c.allow_options("public_url")
    return HubSpotVerifier(c.require_secrets(), c.tolerance_seconds, c.string_option("public_url"))


def _signer(c: ProviderConfig) -> HubSpotSigner:
    c.allow_options("public_url")  # one options table serves both directions
    return HubSpotSigner(c.require_secrets()[0])


def _sample(s: Sample) -> list[Any]:
    return [
        {
            "subscriptionId": 4068571,
            "portalId": 62515,
            "appId": 1160452,
            "occurredAt": int(s.now * 1000),
            "attemptNumber": 0,
            "objectId": 123,
            "changeSource": "CRM",
        }
    ]


PROVIDER = Provider(
    name="hubspot",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="HubSpot (v3)",
        family="business-apps",
        signs="HMAC-SHA256 base64 of method + URI + body + timestamp (X-HubSpot-Signature-v3)",
        unsigned="nothing: eventId and subscriptionType are in the signed body",
        proof="sdk-both-ways",
        proof_source="hubspot-api-client (hubspot.utils.signature.Signature)",
        tolerance_seconds=300,
        window_source="https://developers.hubspot.com/docs/api/webhooks/validating-requests"
        " (five minutes; hubspot-api-client's MAX_ALLOWED_TIMESTAMP)",
        retries="a new POST, signed anew: its timestamp is the attempt's (the five-minute window"
        " would refuse every later retry otherwise) and attemptNumber grows in the body; eventId,"
        " the key, stays",
    ),
    key_specs=specs("json:/0/eventId"),
    type_specs=specs("json:/0/subscriptionType"),
    sample=_sample,
    new_id=lambda: str(secrets.randbelow(10**12) + 1),
    sample_type="contact.creation",
    verifier_options=public_url_option,
    dev_secret=dev_token(),
)
