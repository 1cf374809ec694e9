"""Mollie: two webhook systems. The next-gen webhooks (event subscriptions) are signed:
``X-Mollie-Signature: sha256=<hex>``, HMAC-SHA256 of the raw body under the webhook's
signing secret. While a secret is rotated Mollie sends the header twice, one per secret
(joined with ``,`` when received); any one verifies. No timestamp is signed; the key is the
signed event's ``id`` (``event_...``), the type its ``type`` (``payment-link.paid``, ...).

The classic webhooks (a payment's ``webhookUrl``) are not signed and carry only
``id=tr_...``: Mollie's docs advise fetching that object with the API key and trusting only
what the API says. This scheme refuses them (no signature header). A source for them would
be ``none``, and no key is right for it: every status change of a payment posts the same
body, so ``body-sha256`` or the id would make the second change a duplicate of the first.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, iso_time, specs

__all__ = ["MollieSigner", "MollieVerifier"]

_HEADER = "x-mollie-signature"
_PREFIX = "sha256="


def _hex(secret: str, body: bytes) -> bytes:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest().encode()


@dataclass(frozen=True, slots=True)
class MollieVerifier:
    """Any signature of the header matching any secret passes (rotation, both sides)."""

    secrets: Sequence[str]
    name: str = field(default="mollie")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare each ``sha256=`` value with the HMAC of the body under each secret."""
        values = [v.strip() for v in require_header(request, _HEADER).split(",")]
        if not all(v.startswith(_PREFIX) for v in values):
            raise VerificationError("malformed_header")
        received = [v.removeprefix(_PREFIX).lower().encode("ascii", "replace") for v in values]
        require_match((_hex(s, request.body) for s in self.secrets), *received)


@dataclass(frozen=True, slots=True)
class MollieSigner:
    """Signs as Mollie does: one header value per secret."""

    secrets: Sequence[str]

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature header."""
        values = (_PREFIX + _hex(s, body).decode() for s in self.secrets)
        return {_HEADER: ", ".join(values)}


def _verifier(c: ProviderConfig) -> MollieVerifier:
    c.allow_options()
    return MollieVerifier(c.require_secrets())


def _signer(c: ProviderConfig) -> MollieSigner:
    c.allow_options()
    return MollieSigner(c.require_secrets())


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "resource": "event",
        "entityId": "pl_" + secrets.token_hex(5),
        "createdAt": iso_time(s.now),
        "_links": {"documentation": {"href": "https://docs.mollie.com/reference/webhooks-new"}},
    }


PROVIDER = Provider(
    name="mollie",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Mollie (next-gen webhooks)",
        family="payments",
        signs="HMAC-SHA256 hex of the body (X-Mollie-Signature: sha256=, one per secret)",
        unsigned="nothing: id and type are in the signed event; classic webhooks sign nothing",
        proof="sdk-both-ways",
        proof_source="mollie-api-py (mollie.utils.webhooks.SignatureValidator)",
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "event_" + secrets.token_hex(12),
    sample_type="payment-link.paid",
    dev_secret=lambda: secrets.token_urlsafe(32),
)
