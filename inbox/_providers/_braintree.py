"""Braintree: a form of ``bt_signature`` and ``bt_payload``. The payload is the notification's
XML in base64 (with line breaks); the signature is ``public_key|hex`` pairs joined by ``&``,
each hex the HMAC-SHA1 of the payload's text under the SHA-1 digest of a private key.

The private keys go in ``secrets``: any pair matching any of them verifies (rotation), as
the HMAC is what proves the sender; the public key before the ``|`` only says which key
signed. ``inbox send`` signs as the ``public_key`` option (the API key's public half, no
secret). As Braintree's SDK does, a payload that lost its final line break still verifies.

No timestamp is signed outside the payload, and no delivery id is sent: the key is the
body's hash (a retry re-sends the same form). A form with any other field is refused, but
``bt_signature`` itself is not signed: a captured form re-sent with one more pair verifies
and is a new event. The kind is inside the signed XML, where no
spec reaches: the type is left empty, and a handler reads ``kind`` from the payload
(``WebhookNotification.parse`` in Braintree's SDK, or the decoded XML).

Creating a webhook in the Control Panel first sends a GET with ``bt_challenge`` (hex): the
answer is ``public_key|hex``, the HMAC of the challenge under the first private key, as the
SDK's ``WebhookNotification.verify`` computes it. It needs the ``public_key`` option (without
it the GET is refused, ``no_public_key``), and it is never stored.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus
from xml.sax.saxutils import escape

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, parse_form, require_match
from ._provider import About, GetHandshakeKeys, Provider, ProviderConfig, Sample, dev_token

__all__ = ["BraintreeSigner", "BraintreeVerifier"]

_SIGNATURE = "bt_signature"
_PAYLOAD = "bt_payload"
_DEFAULT_PUBLIC_KEY = "inbox_send"
# What the SDK's verify() accepts as a challenge.
_CHALLENGE = re.compile(r"[a-f0-9]{20,32}")


def _hex_hmac(private_key: str, payload: bytes) -> bytes:
    # Braintree's scheme, not a choice: SHA-1 only derives the HMAC's key here.
    key = hashlib.sha1(private_key.encode()).digest()  # noqa: S324
    return hmac.new(key, payload, hashlib.sha1).hexdigest().encode()


def _fields(body: bytes) -> tuple[str, str]:
    pairs = parse_form(body)
    params = dict(pairs)
    # A repeated name (which one is signed?) or a field Braintree never sends: refused, as
    # the key is the body's hash and an unsigned field would make a replay a new event.
    if len(params) != len(pairs) or params.keys() - {_SIGNATURE, _PAYLOAD}:
        raise VerificationError("malformed_body")
    signature, payload = params.get(_SIGNATURE, ""), params.get(_PAYLOAD, "")
    if not signature or not payload:
        raise VerificationError("missing_header")
    if _CHALLENGE.fullmatch(payload.strip()):
        # The GET handshake signs any challenge it is sent: such a payload (never base64 of
        # XML) would verify with the answer as its signature.
        raise VerificationError("malformed_body")
    return signature, payload


@dataclass(frozen=True, slots=True)
class BraintreeVerifier:
    """Any signature pair under any private key passes (rotation)."""

    secrets: Sequence[str]
    name: str = field(default="braintree")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Compare every pair's hex with the HMAC of the payload under each private key."""
        signature, payload = _fields(request.body)
        received = [
            pair.partition("|")[2].strip().lower().encode("ascii", "replace")
            for pair in signature.split("&")
            if "|" in pair
        ]
        if not received:
            raise VerificationError("malformed_header")
        raw = payload.encode("ascii", "replace")
        expected = [_hex_hmac(s, p) for s in self.secrets for p in (raw, raw + b"\n")]
        require_match(expected, *received)


@dataclass(frozen=True, slots=True)
class BraintreeSigner:
    """Signs like Braintree with one API key pair; the signature goes into the form."""

    private_key: str
    public_key: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """No header: the signature is added to the form by ``sign_body``."""
        return {}

    def sign_body(self, *, body: bytes, url: str, now: float, msg_id: str) -> bytes:
        """Return ``body`` with ``bt_signature`` appended, over its ``bt_payload``."""
        payload = dict(parse_form(body)).get(_PAYLOAD, "")
        digest = _hex_hmac(self.private_key, payload.encode()).decode()
        return (
            body + f"&{_SIGNATURE}=".encode() + quote_plus(f"{self.public_key}|{digest}").encode()
        )


def _verifier(c: ProviderConfig) -> BraintreeVerifier:
    c.allow_options("public_key")
    c.string_option("public_key")
    return BraintreeVerifier(c.require_secrets())


def _signer(c: ProviderConfig) -> BraintreeSigner:
    c.allow_options("public_key")
    public_key = c.string_option("public_key") or _DEFAULT_PUBLIC_KEY
    return BraintreeSigner(c.require_secrets()[0], public_key)


def _challenge(request: WebhookRequest, keys: GetHandshakeKeys) -> str:
    """Braintree creates a webhook only once its URL answers the challenge under the keys."""
    challenge = dict(request.query_params).get("bt_challenge", "")
    if not _CHALLENGE.fullmatch(challenge):
        raise VerificationError("bad_challenge")
    public_key = keys.options.get("public_key")
    if not isinstance(public_key, str) or not public_key or not keys.secrets:
        raise VerificationError("no_public_key")
    return f"{public_key}|{_hex_hmac(keys.secrets[0], challenge.encode()).decode()}"


def _sample(s: Sample) -> dict[str, Any]:
    moment = datetime.datetime.fromtimestamp(int(s.now), datetime.UTC)
    xml = (
        "<notification>"
        f'<timestamp type="datetime">{moment.strftime("%Y-%m-%dT%H:%M:%SZ")}</timestamp>'
        f"<kind>{escape(s.event_type)}</kind>"
        f"<subject><subscription><id>{escape(s.msg_id)}</id>"
        '<transactions type="array"></transactions>'
        '<add_ons type="array"></add_ons><discounts type="array"></discounts>'
        "</subscription></subject>"
        "</notification>"
    )
    return {_PAYLOAD: base64.encodebytes(xml.encode()).decode()}


PROVIDER = Provider(
    name="braintree",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Braintree",
        family="payments",
        signs="HMAC-SHA1 hex of bt_payload under SHA-1(private key), in bt_signature (public|hex)",
        unsigned="bt_signature's other pairs (the key is the body's hash: a form re-sent with"
        " one more pair is a new event); no delivery id; the kind is inside the payload",
        proof="sdk-both-ways",
        proof_source="braintree",
        handshake="GET bt_challenge answered as text/plain, public_key|HMAC-SHA1 of it (the"
        " public_key option; else 403), not stored",
        retries="the same form, re-sent hourly: the body's hash, the key, stays",
    ),
    sample=_sample,
    new_id=lambda: uuid.uuid4().hex[:12],
    sample_type="subscription_went_past_due",
    posts_form=True,
    get_handshake=_challenge,
    dev_secret=dev_token(),
)
