"""Meta (WhatsApp Cloud API, Messenger, Instagram, every Graph API webhook):
``X-Hub-Signature-256: sha256=<hex>``, HMAC-SHA256 of the raw body under the app secret.

It is GitHub's signature, so GitHub's verifier checks it under Meta's name. Meta escapes
non-ASCII characters in the body it signs (``\\u00e4``): the raw bytes verify, a body
re-encoded after parsing does not. No timestamp is signed, so there is no window.

A notification carries no delivery id, and the ids inside it do not name one delivery: a
WhatsApp status update repeats its message's id for sent, delivered and read, and most
other fields carry no id at all. The key is the body's hash: a retry re-sends the same
bytes, and two notifications differ at least in their timestamps. The type is the first
change's ``field`` (``messages``), else the ``object`` (``page``, ``instagram``).

Subscribing sends a GET with ``hub.mode=subscribe``, ``hub.verify_token`` and
``hub.challenge``: the challenge is answered as text/plain when the token is the source's
(read from the environment variable its ``verify_token_env`` option names), a 403
otherwise; it is unsigned, and never stored.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, digests_equal
from ._github import GitHubVerifier
from ._provider import (
    VERIFY_TOKEN_OPTION,
    About,
    GetHandshakeKeys,
    Provider,
    ProviderConfig,
    Sample,
    dev_token,
    specs,
)

__all__ = ["MetaSigner"]

_SIGNATURE = "x-hub-signature-256"
_PREFIX = "sha256="


@dataclass(frozen=True, slots=True)
class MetaSigner:
    """Signs like Meta with one app secret."""

    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature header."""
        digest = hmac.new(self.secret.encode(), body, hashlib.sha256).hexdigest()
        return {_SIGNATURE: _PREFIX + digest}


def _allow_options(c: ProviderConfig) -> None:
    c.allow_options(VERIFY_TOKEN_OPTION)
    c.string_option(VERIFY_TOKEN_OPTION)  # a string, or a ValueError naming it


def _verifier(c: ProviderConfig) -> GitHubVerifier:
    _allow_options(c)
    return GitHubVerifier(c.require_secrets(), name="meta")


def _signer(c: ProviderConfig) -> MetaSigner:
    _allow_options(c)
    return MetaSigner(c.require_secrets()[0])


def _sample(s: Sample) -> dict[str, Any]:
    seconds = str(int(s.now))
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {
                                "display_phone_number": "15550783881",
                                "phone_number_id": "106540352242922",
                            },
                            "messages": [
                                {
                                    "from": "16505551234",
                                    "id": "wamid." + s.msg_id,
                                    "timestamp": seconds,
                                    "type": "text",
                                    "text": {"body": "hello from inbox send"},
                                }
                            ],
                        },
                        "field": s.event_type,
                    }
                ],
            }
        ],
    }


def _subscribe(request: WebhookRequest, keys: GetHandshakeKeys) -> str:
    """The challenge to echo when the GET is a subscription carrying the source's token."""
    if not keys.verify_token:
        raise VerificationError("no_verify_token")
    params = dict(request.query_params)
    challenge = params.get("hub.challenge", "")
    given = params.get("hub.verify_token", "").encode()
    if (
        params.get("hub.mode") != "subscribe"
        or not challenge
        or not digests_equal(keys.verify_token.encode(), given)
    ):
        raise VerificationError("bad_verify_token")
    return challenge


PROVIDER = Provider(
    name="meta",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Meta (WhatsApp Cloud API, Messenger, Instagram)",
        family="messaging",
        signs="HMAC-SHA256 hex of the body as sent, unicode escaped (X-Hub-Signature-256: sha256=)",
        unsigned="nothing: no delivery id is sent (the key is the body's hash); no timestamp",
        proof="docs-only",
        proof_source="https://developers.facebook.com/docs/graph-api/webhooks/getting-started",
        handshake="GET hub.challenge echoed as text/plain when hub.verify_token matches (else"
        " 403), not stored",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/entry/0/changes/0/field", "json:/object"),
    sample=_sample,
    new_id=lambda: uuid.uuid4().hex,
    sample_type="messages",
    get_handshake=_subscribe,
    dev_secret=dev_token(),
)
