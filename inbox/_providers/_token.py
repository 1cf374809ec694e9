"""Schemes that sign nothing: the sender proves itself by a shared token in a header
(GitLab's ``X-Gitlab-Token``, Telegram's ``X-Telegram-Bot-Api-Secret-Token``).

The token is compared in constant time against every configured secret (rotation). Nothing
binds it to the body: anyone who sees one delivery (a log, a proxy) can send any body with
it, so TLS and keeping the headers out of logs are the protection, and the idempotency key
the only defence against replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._base import WebhookRequest, require_header, require_match
from ._provider import ProviderConfig

__all__ = ["TokenSigner", "TokenVerifier", "token_signer", "token_verifier"]


@dataclass(frozen=True, slots=True)
class TokenVerifier:
    """Accepts a request whose ``header`` equals one of ``secrets``."""

    header: str
    secrets: Sequence[str]
    name: str

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare the header with each secret."""
        received = require_header(request, self.header).encode()
        require_match((s.encode() for s in self.secrets), received)


@dataclass(frozen=True, slots=True)
class TokenSigner:
    """Sends the token as the provider does."""

    header: str
    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the token header."""
        return {self.header: self.secret}


def token_verifier(c: ProviderConfig, header: str) -> TokenVerifier:
    c.allow_options()
    return TokenVerifier(header, c.require_secrets(), c.name)


def token_signer(c: ProviderConfig, header: str) -> TokenSigner:
    c.allow_options()
    return TokenSigner(header, c.require_secrets()[0])
