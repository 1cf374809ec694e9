"""GitHub: ``X-Hub-Signature-256: sha256=<hex>``, HMAC-SHA256 over the raw body.

GitHub signs no timestamp, so there is no replay window to check here, nor the delivery id
(``X-GitHub-Delivery``, the key) or the event (``X-GitHub-Event``, the type): a delivery
re-sent under a new id is a new event unless the source keys on the body's hash
(``key_from = "body-sha256"``, docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, require_header, require_match
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs

__all__ = ["GitHubSigner", "GitHubVerifier"]

_PREFIX = "sha256="


def _hex_hmac(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class GitHubVerifier:
    """Only the SHA-256 header: the legacy SHA-1 ``X-Hub-Signature`` is not accepted."""

    secrets: Sequence[str]
    name: str = field(default="github")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare the header with the HMAC of the body under each secret."""
        header = require_header(request, "x-hub-signature-256")
        if not header.startswith(_PREFIX):
            raise VerificationError("malformed_header")
        received = header.removeprefix(_PREFIX).lower().encode("ascii", "replace")
        require_match((_hex_hmac(s, request.body).encode() for s in self.secrets), received)


@dataclass(frozen=True, slots=True)
class GitHubSigner:
    """Signs with the first secret, as GitHub holds one secret per hook."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature header and the delivery id GitHub sends along."""
        return {
            "x-hub-signature-256": _PREFIX + _hex_hmac(self.secret, body),
            "x-github-delivery": msg_id,
        }


def _verifier(c: ProviderConfig) -> GitHubVerifier:
    c.allow_options()
    return GitHubVerifier(c.require_secrets())


def _signer(c: ProviderConfig) -> GitHubSigner:
    c.allow_options()
    return GitHubSigner(c.require_secrets()[0])


def _sample(_s: Sample) -> dict[str, Any]:
    return {"zen": "Design for failure.", "hook_id": 1, "sender": "inbox send"}


PROVIDER = Provider(
    name="github",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="GitHub",
        family="developer-tools",
        signs="HMAC-SHA256 hex of the body (X-Hub-Signature-256: sha256=)",
        unsigned="X-GitHub-Delivery (the key) and X-GitHub-Event (the type); no timestamp",
        proof="vectors",
        proof_source="https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
    ),
    key_specs=specs("header:x-github-delivery"),
    type_specs=specs("header:x-github-event"),
    sample=_sample,
    sample_type="ping",
    dev_secret=dev_token(),
)
