"""The providers room: one module per provider, each ending with its record (``PROVIDER``,
a ``Provider``): its verifier and signer, default key and type specs, the sample ``inbox send``
signs, its reply and handshakes. ``provider(name)`` returns the record; the names are listed
once, in ``inbox._core.config.schemes``.

Verifiers are pure functions of the raw request, no I/O, no clock.

``build_verifier(name, ...)`` turns a source's configuration into a ``Verifier`` whose
``verify(request, now=...)`` returns or raises ``inbox.VerificationError`` (its ``reason``
is for logs and metrics, never for the HTTP caller). ``build_signer`` builds the matching
``Signer`` for ``inbox send`` and tests; ``sign_request`` works for every scheme, including
Alipay's, whose signature lives in the body.

The schemes are listed in ``inbox._core.config.schemes``; ``inbox providers`` (``_catalog``)
describes each from its record, and docs/providers.md holds the same table.

May import: the core room only. Never writing: verifying a request and storing it are sides
that never meet (receiving joins them).
"""

from typing import TYPE_CHECKING, Any

from inbox._core.lazy import load_lazily

from ._base import BodySigner, Signer, Verifier, WebhookRequest
from ._provider import HandshakeReply, Provider, Sample
from ._registry import SCHEMES, build_signer, build_verifier, provider, sign_request

if TYPE_CHECKING:
    from ._twilio import twilio_url_with_body_hash
    from ._wechatpay import decrypt_wechatpay_resource

# A scheme's module loads when first used (see _registry), so its helpers load on first use too.
_LAZY = {
    "decrypt_wechatpay_resource": "inbox._providers._wechatpay",
    "twilio_url_with_body_hash": "inbox._providers._twilio",
}


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _LAZY, name)


__all__ = [
    "SCHEMES",
    "BodySigner",
    "HandshakeReply",
    "Provider",
    "Sample",
    "Signer",
    "Verifier",
    "WebhookRequest",
    "build_signer",
    "build_verifier",
    "decrypt_wechatpay_resource",
    "provider",
    "sign_request",
    "twilio_url_with_body_hash",
]
