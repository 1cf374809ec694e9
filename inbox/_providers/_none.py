"""The ``none`` scheme: accepts every request.

For local development and providers that cannot sign. The receiver logs a warning at
start-up for every source configured with it; this module only does what it says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._base import WebhookRequest
from ._provider import About, Provider, ProviderConfig

__all__ = ["NoneSigner", "NoneVerifier"]


@dataclass(frozen=True, slots=True)
class NoneVerifier:
    """Verifies nothing; the idempotency key is then the only defence against replays."""

    name: str = field(default="none")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Accept the request."""


@dataclass(frozen=True, slots=True)
class NoneSigner:
    """Adds nothing."""

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return no headers."""
        return {}


def _verifier(c: ProviderConfig) -> NoneVerifier:
    c.allow_options()
    return NoneVerifier()


def _signer(c: ProviderConfig) -> NoneSigner:
    c.allow_options()
    return NoneSigner()


PROVIDER = Provider(
    name="none",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="None (unverified)",
        family="generic",
        signs="nothing: every request is accepted (a warning at start-up)",
        unsigned="everything",
        proof="n/a",
        proof_source="",
    ),
    unverified=True,
)
