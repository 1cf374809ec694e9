"""DocuSign Connect: ``X-DocuSign-Signature-1`` .. ``-N``, each the base64 HMAC-SHA256 of the
raw body under one of the account's Connect HMAC keys (one header per active key, numbered
in the order the keys were made).

Any header matching any configured key verifies: a key is rotated by adding the new one in
DocuSign and to ``secrets`` before the old one is removed from both. No timestamp is signed
in a header, and DocuSign documents no window.

A message carries no delivery id, and its body changes on each retry (``retryCount``); no
field names one event alone (an envelope has many events, ``generatedDateTime`` is shared by
events made together). The key is the body's hash: a retry is sent only when no 200 came
back, so one is stored twice only when the inbox's answer was lost; a handler that must
never see an event twice dedupes on ``event``, ``data.envelopeId`` and ``generatedDateTime``.
The type is the body's ``event`` (``envelope-completed``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, iso_time, specs

__all__ = ["DocuSignSigner", "DocuSignVerifier"]

_PREFIX = "x-docusign-signature-"


def _b64_hmac(secret: str, body: bytes) -> bytes:
    return base64.b64encode(hmac.new(secret.encode(), body, hashlib.sha256).digest())


def _signatures(request: WebhookRequest) -> list[bytes]:
    """The values of every numbered signature header, in any order."""
    return [
        value.strip().encode("ascii", "replace")
        for name, value in request.headers.items()
        if name.startswith(_PREFIX) and name[len(_PREFIX) :].isdigit() and value.strip()
    ]


@dataclass(frozen=True, slots=True)
class DocuSignVerifier:
    """Any numbered signature under any key passes (rotation)."""

    secrets: Sequence[str]
    name: str = field(default="docusign")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare each signature header with the HMAC of the body under each key."""
        received = _signatures(request)
        if not received:
            raise VerificationError("missing_header")
        require_match((_b64_hmac(s, request.body) for s in self.secrets), *received)


@dataclass(frozen=True, slots=True)
class DocuSignSigner:
    """Signs like DocuSign with one HMAC key, as ``X-DocuSign-Signature-1``."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the first signature header."""
        return {_PREFIX + "1": _b64_hmac(self.secret, body).decode()}


def _verifier(c: ProviderConfig) -> DocuSignVerifier:
    c.allow_options()
    return DocuSignVerifier(c.require_secrets())


def _signer(c: ProviderConfig) -> DocuSignSigner:
    c.allow_options()
    return DocuSignSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "apiVersion": "v2.1",
        "uri": f"/restapi/v2.1/accounts/inbox-send/envelopes/{s.msg_id}",
        "retryCount": 0,
        "configurationId": 10000001,
        "generatedDateTime": iso_time(s.now),
        "data": {"accountId": "inbox-send", "userId": "inbox-send", "envelopeId": s.msg_id},
    }


PROVIDER = Provider(
    name="docusign",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="DocuSign Connect",
        family="business-apps",
        signs="HMAC-SHA256 base64 of the body, one X-DocuSign-Signature-N per account key",
        unsigned="nothing: no delivery id is sent (the key is the body's hash, which retryCount"
        " changes); no timestamp header",
        proof="docs-only",
        proof_source="https://developers.docusign.com/platform/webhooks/connect/validate/",
        retries="a new body (retryCount grows), so a new key: DocuSign retries only without a"
        " 200, so a retry after a lost 200 is stored as a second event",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/event"),
    sample=_sample,
    new_id=lambda: str(uuid.uuid4()),
    sample_type="envelope-completed",
    dev_secret=dev_token(),
)
