"""What every benchmark writes: a ~1 KB Stripe-like JSON body naming its key, and the
headers a Standard Webhooks delivery carries, built so the client's own cost stays
negligible. Shared by the ingest, processing, latency and ordering benchmarks."""

from __future__ import annotations

import json

SOURCE = "bench"
EVENT_TYPE = "invoice.paid"
BODY_SIZE = 1024


def _body_template() -> tuple[bytes, bytes]:
    """The body, split around its key (built once, not per write)."""
    marker = "@@KEY@@"
    doc = {
        "id": marker,
        "object": "event",
        "type": EVENT_TYPE,
        "created": 1_767_225_600,
        "livemode": False,
        "data": {
            "object": {
                "id": "in_1QbAbC2eZvKYlo2C",
                "object": "invoice",
                "amount_due": 4200,
                "currency": "usd",
                "customer": "cus_R1a2b3c4d5e6f7",
                "status": "paid",
                "description": "",
            }
        },
    }
    typical_key = 24
    base = len(json.dumps(doc, separators=(",", ":"))) - len(marker) + typical_key
    doc["data"]["object"]["description"] = "x" * max(0, BODY_SIZE - base)  # type: ignore[index]
    head, _, tail = json.dumps(doc, separators=(",", ":")).partition(marker)
    return head.encode(), tail.encode()


_BODY_HEAD, _BODY_TAIL = _body_template()


def make_body(key: str) -> bytes:
    """A ~1 KB JSON body naming its key."""
    return _BODY_HEAD + key.encode() + _BODY_TAIL


def make_headers(key: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": key,
        "webhook-timestamp": "1767225600",
        "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
        "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
    }
