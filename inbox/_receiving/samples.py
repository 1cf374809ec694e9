"""The signed test request of ``inbox send``: a sample payload, a fresh key, the signature.

Pure (the clock and the id are passed in): the sample is the source's ``sample`` table, else
a small payload in the provider's shape. A fresh idempotency key and the event type are put
where the source's extraction reads them (``inbox._receiving.extract.inject``), so every send
is a new event, whatever ``key_from`` / ``type_from`` say.
"""

from __future__ import annotations

import copy
import datetime
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from inbox._core.settings import SourceSettings
from inbox._providers import sign_request
from inbox._providers._base import FORM_CONTENT_TYPE
from inbox._receiving.extract import inject
from inbox._receiving.source_config import source_extraction, source_signer

__all__ = ["SampleRequest", "build_sample"]

# Providers that post form-encoded bodies; the others post JSON.
_FORM_SCHEMES = frozenset({"alipay", "twilio"})

_DEFAULT_TYPES = {
    "standard-webhooks": "inbox.test",
    "stripe": "payment_intent.succeeded",
    "github": "ping",
    "shopify": "orders/create",
    "slack": "app_mention",
    "alipay": "trade_status_sync",
    "wechatpay": "TRANSACTION.SUCCESS",
}


# Shopify's own library (@shopify/shopify-api) refuses a delivery without the shop domain and
# the API version; a sample names a shop that cannot exist and a released version.
_SHOPIFY_SHOP_DOMAIN = "inbox-send.myshopify.com"
_SHOPIFY_API_VERSION = "2026-04"


@dataclass(frozen=True, slots=True)
class SampleRequest:
    url: str
    body: bytes
    headers: dict[str, str]
    key: str


def _iso(now: float) -> str:
    return datetime.datetime.fromtimestamp(now, datetime.UTC).isoformat(timespec="seconds")


def _payload(verifier: str, msg_id: str, now: float, event_type: str) -> dict[str, Any]:
    """A small payload in the provider's shape (key and type are injected afterwards)."""
    # Stripe's object is the one the type is about: an invoice for `invoice.*`.
    stripe_object: dict[str, Any] = (
        {"object": "invoice", "amount_due": 100, "amount_paid": 100, "currency": "usd"}
        if event_type.startswith("invoice.")
        else {"object": "payment_intent", "amount": 100, "currency": "usd"}
    )
    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "standard-webhooks": lambda: {
            "timestamp": _iso(now),
            "data": {"message": "hello from inbox send"},
        },
        "stripe": lambda: {
            "object": "event",
            "created": int(now),
            "livemode": False,
            "data": {"object": stripe_object},
        },
        "github": lambda: {"zen": "Design for failure.", "hook_id": 1, "sender": "inbox send"},
        "shopify": lambda: {"id": int(now), "note": "sent by inbox send"},
        "slack": lambda: {
            "type": "event_callback",
            "event_time": int(now),
            "event": {"text": "hello from inbox send"},
        },
        "twilio": lambda: {
            "MessageSid": "SM" + uuid.uuid4().hex,
            "AccountSid": "AC" + "0" * 32,
            "From": "+15005550006",
            "To": "+15005550001",
            "Body": "hello from inbox send",
        },
        "alipay": lambda: {
            "notify_time": _iso(now).replace("T", " ")[:19],
            "app_id": "2021000000000000",
            "charset": "utf-8",
            "version": "1.0",
            "trade_no": "2024" + uuid.uuid4().hex[:20],
            "out_trade_no": "inbox-send-" + msg_id[-12:],
            "trade_status": "TRADE_SUCCESS",
            "total_amount": "0.01",
        },
        "wechatpay": lambda: {
            "create_time": _iso(now),
            "resource_type": "encrypt-resource",
            "summary": "sent by inbox send",
            "resource": {"algorithm": "AEAD_AES_256_GCM", "associated_data": "transaction"},
        },
    }
    build = builders.get(verifier)
    # hmac, none: the id in the body keeps a body-hash key fresh.
    return build() if build else {"id": msg_id, "message": "hello from inbox send"}


def _envelope(verifier: str, *, msg_id: str, event_type: str, now: float) -> dict[str, str]:
    """The headers besides the signature that the provider's deliveries always carry."""
    if verifier != "shopify":
        return {}
    moment = datetime.datetime.fromtimestamp(now, datetime.UTC)
    return {
        "x-shopify-topic": event_type,
        "x-shopify-shop-domain": _SHOPIFY_SHOP_DOMAIN,
        "x-shopify-api-version": _SHOPIFY_API_VERSION,
        "x-shopify-triggered-at": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "x-shopify-event-id": msg_id,
        "x-shopify-webhook-id": msg_id,
    }


def _content_type(body: bytes, *, form: bool) -> str:
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return FORM_CONTENT_TYPE if form else "application/octet-stream"
    return "application/json"


def _new_id(verifier: str) -> str:
    if verifier == "shopify":
        return str(uuid.uuid4())  # Shopify's ids are UUIDs in their usual spelling
    prefix = {"stripe": "evt_", "standard-webhooks": "msg_", "slack": "Ev"}.get(verifier, "")
    return prefix + uuid.uuid4().hex


def build_sample(
    source: SourceSettings,
    *,
    url: str,
    now: float,
    body: bytes | None = None,
    event_type: str | None = None,
    msg_id: str | None = None,
    content_type: str | None = None,
) -> SampleRequest:
    """Sign a sample (or ``body``, sent as given) for ``source``, to be posted to ``url``.

    The content type is ``content_type``, else what the body is: JSON when it parses as
    JSON, the provider's form encoding for form schemes, else ``application/octet-stream``.

    Raises ``ConfigError`` when the source cannot sign (e.g. no ``private_key``).
    """
    signer = source_signer(source)
    extraction = source_extraction(source)
    msg_id = msg_id or _new_id(source.verifier)
    event_type = event_type or _DEFAULT_TYPES.get(source.verifier, "inbox.test")
    # Injected values below win, so the source's key_from / type_from still decide.
    headers = _envelope(source.verifier, msg_id=msg_id, event_type=event_type, now=now)
    # With a given body, only headers can carry the key and type: the bytes are sent as is.
    payload: dict[str, Any] = (
        copy.deepcopy(source.sample)
        if body is None and source.sample is not None
        else _payload(source.verifier, msg_id, now, event_type)
    )
    inject(extraction.key_specs[0], msg_id, payload=payload, headers=headers)
    if extraction.type_specs:
        inject(extraction.type_specs[0], event_type, payload=payload, headers=headers)
    form = source.verifier in _FORM_SCHEMES
    if body is None:
        if form:
            body = urlencode({k: str(v) for k, v in payload.items()}).encode()
        else:
            body = json.dumps(payload, separators=(",", ":")).encode()
    headers["content-type"] = content_type or _content_type(body, form=form)
    # Twilio signs the URL it calls; behind a proxy that is the configured public URL.
    signed_url = source.public_url or url
    signed_body, signature = sign_request(signer, body=body, url=signed_url, now=now, msg_id=msg_id)
    headers.update(signature)
    return SampleRequest(url=url, body=signed_body, headers=headers, key=msg_id)
