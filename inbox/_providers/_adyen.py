"""Adyen (standard webhooks, the payments notifications): each ``NotificationRequestItem``
carries ``additionalData.hmacSignature``, the base64 HMAC-SHA256 of eight of its fields joined
by ``:`` (``pspReference``, ``originalReference``, ``merchantAccountCode``,
``merchantReference``, ``amount.value``, ``amount.currency``, ``eventCode``, ``success``; a
missing one is empty) under the HMAC key, which Adyen shows as hex.

Only those fields are signed: ``eventDate``, ``reason``, ``paymentMethod``, ``operations`` and
the rest of ``additionalData`` travel beside them, as does ``live``. Every item of a delivery
must verify. No timestamp is signed and a delivery has no id: the key is the body's hash (a
retry carries the same bytes). Adyen deduplicates by ``eventCode`` with ``pspReference``, the
type a handler reads from the item; a default type would need ``inbox send`` to write into
the item list, which it cannot yet. Adyen waits for ``[accepted]`` in the reply.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from inbox._core.errors import VerificationError

from ._base import WebhookRequest, b64decode_lenient, require_match
from ._provider import About, Provider, ProviderConfig, Sample, iso_time

__all__ = ["AdyenSigner", "AdyenVerifier", "adyen_signing_string"]

_FIELDS = ("pspReference", "originalReference", "merchantAccountCode", "merchantReference")


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    raise VerificationError("malformed_body")


def adyen_signing_string(item: dict[str, Any]) -> bytes:
    """The eight fields Adyen signs, joined by ``:``, from a ``NotificationRequestItem``."""
    amount = item.get("amount") or {}
    if not isinstance(amount, dict):
        raise VerificationError("malformed_body")
    values = [
        *(item.get(name) for name in _FIELDS),
        amount.get("value"),
        amount.get("currency"),
        item.get("eventCode"),
        item.get("success"),
    ]
    return ":".join(_text(v) for v in values).encode()


def _items(document: object) -> list[dict[str, Any]]:
    entries = document.get("notificationItems") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise VerificationError("malformed_body")
    items = [e.get("NotificationRequestItem") if isinstance(e, dict) else None for e in entries]
    if not all(isinstance(item, dict) for item in items):
        raise VerificationError("malformed_body")
    return [item for item in items if isinstance(item, dict)]


def _decode_key(hex_key: str) -> bytes:
    try:
        key = binascii.unhexlify(hex_key.strip())
    except (binascii.Error, ValueError) as exc:
        raise ValueError("adyen: an HMAC key is the hex string Adyen shows") from exc
    if not key:
        raise ValueError("adyen: an HMAC key must not be empty")
    return key


def _digest(key: bytes, item: dict[str, Any]) -> bytes:
    return hmac.new(key, adyen_signing_string(item), hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class AdyenVerifier:
    """Every item must match under one of the keys (rotation)."""

    keys: Sequence[bytes]
    name: str = field(default="adyen")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check each item's ``hmacSignature``."""
        try:
            document = json.loads(request.body)
        except (ValueError, RecursionError):
            raise VerificationError("malformed_body") from None
        for item in _items(document):
            extra = item.get("additionalData")
            signature = extra.get("hmacSignature") if isinstance(extra, dict) else None
            if not isinstance(signature, str) or not signature:
                raise VerificationError("missing_signature")
            try:
                received = b64decode_lenient(signature)
            except ValueError:
                raise VerificationError("malformed_signature") from None
            require_match((_digest(k, item) for k in self.keys), received)


@dataclass(frozen=True, slots=True)
class AdyenSigner:
    """Writes each item's ``hmacSignature`` into the body, as Adyen does."""

    key: bytes

    def sign_body(self, *, body: bytes, url: str, now: float, msg_id: str) -> bytes:
        """Return the body with every item signed."""
        document = json.loads(body)
        for item in _items(document):
            extra = item.setdefault("additionalData", {})
            extra["hmacSignature"] = base64.b64encode(_digest(self.key, item)).decode()
        return json.dumps(document, separators=(",", ":")).encode()

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Adyen adds no header: the signatures are in the body."""
        return {}


def _verifier(c: ProviderConfig) -> AdyenVerifier:
    c.allow_options()
    return AdyenVerifier([_decode_key(k) for k in c.require_secrets()])


def _signer(c: ProviderConfig) -> AdyenSigner:
    c.allow_options()
    return AdyenSigner(_decode_key(c.require_secrets()[0]))


def _sample(s: Sample) -> dict[str, Any]:
    # The delivery's id as the pspReference: two sends are two bodies, so two events.
    item = {
        "pspReference": s.msg_id,
        "merchantAccountCode": "InboxSendECOM",
        "merchantReference": "inbox-send",
        "amount": {"value": 1000, "currency": "EUR"},
        "eventCode": s.event_type,
        "eventDate": iso_time(s.now),
        "success": "true",
        "paymentMethod": "visa",
        "additionalData": {},
    }
    return {"live": "false", "notificationItems": [{"NotificationRequestItem": item}]}


PROVIDER = Provider(
    name="adyen",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Adyen (standard webhooks)",
        family="payments",
        signs="per item, HMAC-SHA256 base64 of pspReference:...:eventCode:success (hex key)",
        unsigned="eventDate, reason, the rest of additionalData, live; no id, no timestamp",
        proof="sdk-both-ways",
        proof_source="Adyen (Adyen.util, generate_notification_sig / is_valid_hmac_notification)",
    ),
    sample=_sample,
    new_id=lambda: "".join(str(secrets.randbelow(10)) for _ in range(16)),
    sample_type="AUTHORISATION",
    accepted_reply=(b"[accepted]", "text/plain"),
    dev_secret=lambda: secrets.token_hex(32).upper(),
)
