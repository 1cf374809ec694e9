"""Standard Webhooks (https://www.standardwebhooks.com): symmetric ``v1`` and asymmetric ``v1a``.

Signed content is ``{webhook-id}.{webhook-timestamp}.{body}``. ``webhook-signature`` is a
space-separated list of ``version,base64`` entries, so a sender can sign with an old and a
new secret during rotation, and a receiver skips versions it does not know (forward
compatibility). Only when *no* entry has a version we can check does verification fail with
``no_supported_signature``.

Svix, through which many providers deliver, sends the same three headers as ``svix-id``,
``svix-timestamp`` and ``svix-signature`` (only white-labelled accounts send ``webhook-*``):
each is read under either name, the spec's first.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, check_timestamp, matches_any, require_header
from ._provider import About, Provider, ProviderConfig, Sample, iso_time, specs

__all__ = [
    "StandardWebhooksSigner",
    "StandardWebhooksVerifier",
    "SvixSigner",
    "dev_whsec",
    "svix_signer",
    "svix_verifier",
]

# Key-type prefixes from the spec, not secrets themselves.
_SECRET_PREFIX = "whsec_"  # noqa: S105
_PUBLIC_KEY_PREFIX = "whpk_"
_SECRET_KEY_PREFIX = "whsk_"  # noqa: S105


def decode_secret(secret: str) -> bytes:
    """A ``whsec_`` secret is base64; the prefix is optional, as in the reference libraries."""
    text = secret.strip().removeprefix(_SECRET_PREFIX)
    try:
        key = b64decode_lenient(text)
    except ValueError as exc:
        raise ValueError("a standard-webhooks secret must be base64 (whsec_...)") from exc
    if not key:
        raise ValueError("a standard-webhooks secret must not be empty")
    return key


def decode_public_key(public_key: str) -> Ed25519PublicKey:
    """A ``whpk_`` key is the base64 of the raw 32-byte Ed25519 public key."""
    text = public_key.strip().removeprefix(_PUBLIC_KEY_PREFIX)
    try:
        raw = b64decode_lenient(text)
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        raise ValueError(
            "a standard-webhooks public key must be whpk_ + base64 of 32 bytes"
        ) from exc


def decode_secret_key(secret_key: str) -> Ed25519PrivateKey:
    """A ``whsk_`` key is base64 of the 32-byte seed, or of seed + public key (64 bytes).

    libsodium and several SDKs store the 64-byte form; accepting both saves operators from
    converting keys by hand.
    """
    text = secret_key.strip().removeprefix(_SECRET_KEY_PREFIX)
    try:
        raw = b64decode_lenient(text)
    except ValueError as exc:
        raise ValueError("a standard-webhooks secret key must be whsk_ + base64") from exc
    if len(raw) not in (32, 64):
        raise ValueError("a standard-webhooks secret key must decode to 32 or 64 bytes")
    return Ed25519PrivateKey.from_private_bytes(raw[:32])


def _signed_content(msg_id: str, timestamp: str, body: bytes) -> bytes:
    return f"{msg_id}.{timestamp}.".encode() + body


@dataclass(frozen=True, slots=True)
class StandardWebhooksVerifier:
    """Verifies ``v1`` (HMAC-SHA256) against secrets and ``v1a`` (Ed25519) against public keys."""

    secrets: Sequence[bytes]
    public_keys: Sequence[Ed25519PublicKey]
    tolerance_seconds: int
    name: str = field(default="standard-webhooks")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check headers, then the timestamp, then any one supported signature."""
        msg_id = require_header(request, "webhook-id", "svix-id")
        timestamp = require_header(request, "webhook-timestamp", "svix-timestamp")
        signatures = require_header(request, "webhook-signature", "svix-signature")
        check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        content = _signed_content(msg_id, timestamp, request.body)

        supported = False
        for entry in signatures.split():
            version, sep, encoded = entry.partition(",")
            if not sep:
                continue
            if version == "v1" and self.secrets:
                matches = self._hmac_matches
            elif version == "v1a" and self.public_keys:
                matches = self._ed25519_matches
            else:
                continue  # a version we cannot check: skip it, a later entry may be one we can
            supported = True
            try:
                signature = b64decode_lenient(encoded)
            except ValueError:
                continue
            if matches(content, signature):
                return
        raise VerificationError("bad_signature" if supported else "no_supported_signature")

    def _hmac_matches(self, content: bytes, signature: bytes) -> bool:
        expected = (hmac.new(s, content, hashlib.sha256).digest() for s in self.secrets)
        return matches_any(expected, signature)

    def _ed25519_matches(self, content: bytes, signature: bytes) -> bool:
        for key in self.public_keys:
            try:
                key.verify(signature, content)
            except InvalidSignature:
                continue
            return True
        return False


@dataclass(frozen=True, slots=True)
class StandardWebhooksSigner:
    """Signs with every secret and key given, as a sender does while rotating."""

    secrets: Sequence[bytes]
    private_key: Ed25519PrivateKey | None

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return webhook-id, webhook-timestamp and webhook-signature."""
        timestamp = str(int(now))
        content = _signed_content(msg_id, timestamp, body)
        entries = [
            "v1," + base64.b64encode(hmac.new(s, content, hashlib.sha256).digest()).decode()
            for s in self.secrets
        ]
        if self.private_key is not None:
            entries.append("v1a," + base64.b64encode(self.private_key.sign(content)).decode())
        return {
            "webhook-id": msg_id,
            "webhook-timestamp": timestamp,
            "webhook-signature": " ".join(entries),
        }


@dataclass(frozen=True, slots=True)
class SvixSigner:
    """Signs as a provider delivering through Svix does: the ``svix-*`` header names."""

    signer: StandardWebhooksSigner

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return svix-id, svix-timestamp and svix-signature."""
        headers = self.signer.sign(body=body, url=url, now=now, msg_id=msg_id)
        return {"svix-" + k.removeprefix("webhook-"): v for k, v in headers.items()}


def svix_verifier(c: ProviderConfig) -> StandardWebhooksVerifier:
    """A provider that delivers through Svix (Resend, Clerk): its ``whsec_`` secrets, its name."""
    c.allow_options()
    secrets = [decode_secret(s) for s in c.require_secrets()]
    return StandardWebhooksVerifier(secrets, (), c.tolerance_seconds, name=c.name)


def svix_signer(c: ProviderConfig) -> SvixSigner:
    c.allow_options()
    secrets = [decode_secret(s) for s in c.require_secrets()]
    return SvixSigner(StandardWebhooksSigner(secrets, None))


def _verifier(c: ProviderConfig) -> StandardWebhooksVerifier:
    c.allow_options()
    secrets = [decode_secret(s) for s in c.secrets]
    keys = [decode_public_key(k) for k in c.key_list()]
    if not secrets and not keys:
        raise ValueError(f"{c.name}: needs whsec_ secrets or whpk_ public_keys (or both)")
    return StandardWebhooksVerifier(secrets, keys, c.tolerance_seconds)


def _signer(c: ProviderConfig) -> StandardWebhooksSigner:
    c.allow_options()
    secrets = [decode_secret(s) for s in c.secrets]
    key = decode_secret_key(c.private_key) if c.private_key else None
    if not secrets and key is None:
        raise ValueError(f"{c.name}: needs whsec_ secrets or a whsk_ private_key to sign")
    return StandardWebhooksSigner(secrets, key)


def _sample(s: Sample) -> dict[str, Any]:
    return {"timestamp": iso_time(s.now), "data": {"message": "hello from inbox send"}}


def dev_whsec() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


PROVIDER = Provider(
    name="standard-webhooks",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Standard Webhooks (and Svix)",
        family="generic",
        signs="HMAC-SHA256 (v1) or Ed25519 (v1a) of `{webhook-id}.{webhook-timestamp}.{body}`",
        unsigned="nothing: the id and timestamp are signed; the type is in the body",
        proof="sdk-both-ways",
        proof_source="svix; vectors of standard-webhooks/standard-webhooks",
        tolerance_seconds=300,
        window_source="standard-webhooks spec and standardwebhooks (five minutes)",
    ),
    # Svix sends the spec's headers as svix-*; the verifier reads the same order.
    key_specs=specs("header:webhook-id", "header:svix-id"),
    type_specs=specs("json:/type"),
    sample=_sample,
    new_id=lambda: "msg_" + uuid.uuid4().hex,
    sample_type="inbox.test",
    dev_secret=dev_whsec,
)
