"""Discord interactions: ``X-Signature-Ed25519``, the hex Ed25519 signature of
``{X-Signature-Timestamp}{body}`` under the application's key pair.

The application's public key (hex, as the developer portal shows it) goes in the source's
``public_keys``, as SendGrid's and Plaid's do: it is no secret. Several keys verify while
an endpoint moves to another application. ``inbox send`` signs with ``private_key``: the
hex 32-byte seed, or a PEM Ed25519 key. Discord documents no window: the signed
timestamp gets the default one, or the source's ``tolerance_seconds``.

An interaction must be answered within three seconds, so a stored one is acknowledged with
``{"type":5}`` (deferred): the handler then answers through the interaction's follow-up
webhook. Discord's PING (type 1), sent when the endpoint URL is saved and now and then
after, is answered ``{"type":1}`` and not stored.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_header
from ._provider import About, Provider, ProviderConfig, Sample, specs

__all__ = ["DiscordSigner", "DiscordVerifier"]

_SIGNATURE = "x-signature-ed25519"
_TIMESTAMP = "x-signature-timestamp"
_PING, _PONG, _DEFERRED = 1, 1, 5


def _public_key(text: str) -> Ed25519PublicKey:
    try:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(text.strip()))
    except ValueError as exc:
        raise ValueError(
            "a Discord public key is the application's 64 hex characters (its portal shows it)"
        ) from exc


def _private_key(text: str) -> Ed25519PrivateKey:
    text = text.strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(text.encode("ascii"), password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError("not an Ed25519 key")
            return key
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(text))
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"cannot load the private key ({exc}): a hex 32-byte seed or a PEM Ed25519 key"
        ) from exc


@dataclass(frozen=True, slots=True)
class DiscordVerifier:
    """Any public key verifying passes (a change of application)."""

    public_keys: Sequence[Ed25519PublicKey]
    tolerance_seconds: int
    name: str = field(default="discord")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the timestamp, then the signature of timestamp + body under each key."""
        timestamp = require_header(request, _TIMESTAMP)
        header = require_header(request, _SIGNATURE)
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        try:
            signature = bytes.fromhex(header)
        except ValueError:
            raise VerificationError("malformed_header") from None
        message = timestamp.encode() + request.body
        verified = False
        for key in self.public_keys:  # every key is tried: the time says nothing of which
            try:
                key.verify(signature, message)
                verified = True
            except InvalidSignature:
                pass
        if not verified:
            raise VerificationError("bad_signature")


@dataclass(frozen=True, slots=True)
class DiscordSigner:
    """Signs like Discord with the application's private key."""

    private_key: Ed25519PrivateKey

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature and timestamp headers."""
        timestamp = str(int(now))
        signature = self.private_key.sign(timestamp.encode() + body)
        return {_TIMESTAMP: timestamp, _SIGNATURE: signature.hex()}


def _verifier(c: ProviderConfig) -> DiscordVerifier:
    c.allow_options()
    keys = [_public_key(k) for k in c.key_list()]
    if not keys:
        raise ValueError(f"{c.name}: public_keys needs the application's public key (hex)")
    return DiscordVerifier(keys, c.tolerance_seconds)


def _signer(c: ProviderConfig) -> DiscordSigner:
    c.allow_options()
    return DiscordSigner(_private_key(c.require_private_key()))


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "application_id": "1100000000000000000",
        "type": 2,
        "token": "inbox-send-" + secrets.token_urlsafe(16),
        "version": 1,
        "data": {"id": "1100000000000000001", "type": 1},
        "channel_id": "1100000000000000002",
    }


def _ping(request: WebhookRequest, _secrets: Sequence[str]) -> dict[str, Any] | None:
    """Discord saves an endpoint URL only once its signed PING is answered with a PONG."""
    try:
        payload = json.loads(request.body)
    except (ValueError, RecursionError):
        return None
    if isinstance(payload, dict) and payload.get("type") == _PING:
        return {"type": _PONG}
    return None


def _snowflake() -> str:
    return str(secrets.randbelow(9 * 10**18) + 10**18)


PROVIDER = Provider(
    name="discord",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Discord interactions",
        family="messaging",
        signs="Ed25519 hex of `{timestamp}{body}` (X-Signature-Ed25519, X-Signature-Timestamp)",
        unsigned="nothing: the interaction's id and command name are in the signed body",
        proof="sdk-verifies",
        proof_source="discord-interactions (verify_key)",
        window_source="none documented"
        " (Discord's security-and-authorization page; discord-interactions checks none)",
        handshake='PING (type 1): answered {"type":1}, not stored',
    ),
    key_specs=specs("json:/id"),
    type_specs=specs("json:/data/name", "json:/data/custom_id", "json:/type"),
    sample=_sample,
    new_id=_snowflake,
    sample_type="hello",
    accepted_reply=(b'{"type":%d}' % _DEFERRED, "application/json"),
    handshake=_ping,
)
