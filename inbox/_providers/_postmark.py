"""Postmark: no signature. Postmark's docs advise HTTP basic auth in the webhook's URL
(``https://user:password@host/...``, sent as ``Authorization: Basic ...``) and, beside it,
allowing only Postmark's published IP ranges (a firewall's or a proxy's job, not this one).

A source's ``secrets`` are the ``user:password`` pairs it accepts (several while rotating),
each compared in constant time with the credentials received. As with a token (see
``_token``), nothing binds them to the body. A delivery carries no id of its own: the key is
the body's hash (a retry carries the same bytes); the type is the body's ``RecordType``
(``Delivery``, ``Bounce``, ``Open``, ...).
"""

from __future__ import annotations

import base64
import binascii
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, iso_time, specs

__all__ = ["BasicAuthSigner", "BasicAuthVerifier"]


def _credentials(header: str) -> bytes:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        raise VerificationError("malformed_header")
    try:
        return base64.b64decode(encoded.strip(), validate=True)
    except binascii.Error:
        raise VerificationError("malformed_header") from None


@dataclass(frozen=True, slots=True)
class BasicAuthVerifier:
    """Accepts a request whose basic-auth ``user:password`` is one of ``secrets``."""

    secrets: Sequence[str]
    name: str = field(default="postmark")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare the credentials received with each configured pair."""
        received = _credentials(require_header(request, "authorization"))
        require_match((s.encode() for s in self.secrets), received)


@dataclass(frozen=True, slots=True)
class BasicAuthSigner:
    """Sends the credentials as an HTTP client does for a URL with ``user:password@``."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the Authorization header."""
        return {"authorization": "Basic " + base64.b64encode(self.secret.encode()).decode()}


def _checked(c: ProviderConfig) -> list[str]:
    pairs = c.require_secrets()
    if any(":" not in pair for pair in pairs):
        raise ValueError(f"{c.name}: each secret is the webhook URL's user:password")
    return pairs


def _verifier(c: ProviderConfig) -> BasicAuthVerifier:
    c.allow_options()
    return BasicAuthVerifier(_checked(c))


def _signer(c: ProviderConfig) -> BasicAuthSigner:
    c.allow_options()
    return BasicAuthSigner(_checked(c)[0])


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "MessageID": s.msg_id,
        "Recipient": "delivered@example.com",
        "DeliveredAt": iso_time(s.now),
        "MessageStream": "outbound",
        "ServerID": 1,
        "Details": "hello from inbox send",
    }


def _dev_secret() -> str:
    return "postmark:" + secrets.token_urlsafe(24)


PROVIDER = Provider(
    name="postmark",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Postmark",
        family="messaging",
        signs="nothing: HTTP basic auth from the webhook URL's user:password, as Postmark advises",
        unsigned="the body, with RecordType; no delivery id (the body's hash)",
        proof="docs-only",
        proof_source="https://postmarkapp.com/developer/webhooks/webhooks-overview",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/RecordType"),
    sample=_sample,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="Delivery",
    dev_secret=_dev_secret,
)
