"""`inbox send`'s samples verify with the source's own verifier, for every scheme."""

from __future__ import annotations

import base64
import datetime
import re
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from inbox import Receiver, Settings
from inbox._providers import SCHEMES, WebhookRequest
from inbox._receiving.samples import build_sample
from inbox._receiving.source_config import source_verifier
from tests.receiver.conftest import RsaPair, source_tables
from tests.verifiers._ec import make_ec_pair


def _ed25519() -> tuple[str, str]:
    key = ed25519.Ed25519PrivateKey.generate()
    seed = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return "whsk_" + base64.b64encode(seed).decode(), "whpk_" + base64.b64encode(public).decode()


def _tables(rsa_pair: RsaPair) -> list[dict[str, Any]]:
    whsk, whpk = _ed25519()
    seed = ed25519.Ed25519PrivateKey.generate()
    discord_private = seed.private_bytes_raw().hex()
    discord_public = seed.public_key().public_bytes_raw().hex()
    ec = make_ec_pair()
    return [
        *source_tables(rsa_pair),
        {"name": "shopify", "verifier": "shopify", "secrets": ["shpss"]},
        {
            "name": "twilio",
            "verifier": "twilio",
            "secrets": ["auth-token"],
            "public_url": "https://hooks.example.com/twilio",
        },
        {
            "name": "recipe",
            "verifier": "hmac",
            "secrets": ["s3cret"],
            "options": {
                "header": "X-Signature",
                "prefix": "sha256=",
                "signed_content": "{timestamp}.{body}",
                "timestamp_header": "X-Timestamp",
                "id_header": "X-Delivery",
            },
        },
        {
            "name": "ed25519",
            "verifier": "standard-webhooks",
            "public_keys": [whpk],
            "private_key": whsk,
        },
        *(
            {"name": scheme, "verifier": scheme, "secrets": [secret]}
            for scheme, secret in (
                ("resend", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
                ("clerk", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
                ("paddle", "pdl_ntfset_x"),
                ("razorpay", "rzp"),
                ("lemonsqueezy", "ls"),
                ("coinbase-commerce", "cc"),
                ("gitlab", "tok"),
                ("telegram", "tok"),
                ("intercom", "ic"),
                ("typeform", "tf"),
                ("vercel", "vc"),
                ("bitbucket", "bb"),
                ("sentry", "sn"),
                ("calendly", "cal"),
                ("linear", "lin"),
                ("square", "sq"),
                ("zendesk", "zd"),
                ("mailgun", "key-mg"),
                ("postmark", "user:pass"),
                ("mollie", "ml"),
                ("meta", "meta-app-secret"),
                ("jira", "jira"),
                ("docusign", "ds"),
                ("braintree", "bt-private"),
                ("zoom", "zm"),
                ("twitch", "tw"),
                ("adyen", "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"),
            )
        ),
        {
            "name": "paypal",
            "verifier": "paypal",
            "public_keys": {"CERT-1": rsa_pair.certificate_pem},
            "private_key": rsa_pair.private_pem,
            "options": {"webhook_id": "WH-ID-1"},
        },
        {
            "name": "sendgrid",
            "verifier": "sendgrid",
            "public_keys": [ec.public_b64],
            "private_key": ec.private_pem,
        },
        {
            "name": "plaid",
            "verifier": "plaid",
            "public_keys": {"kid-1": ec.jwk},
            "private_key": ec.private_pem,
        },
        {
            "name": "hubspot",
            "verifier": "hubspot",
            "secrets": ["hs"],
            "public_url": "https://hooks.example.com/hubspot",
        },
        {
            "name": "discord",
            "verifier": "discord",
            "public_keys": [discord_public],
            "private_key": discord_private,
        },
        {
            "name": "custom",
            "verifier": "stripe",
            "secrets": ["whsec_x"],
            "key_from": "json:/meta/delivery",
            "type_from": "header:x-kind",
            "sample": {"meta": {"note": "mine"}},
        },
    ]


def test_every_scheme_is_covered(rsa_pair: RsaPair) -> None:
    assert {t["verifier"] for t in _tables(rsa_pair)} == set(SCHEMES)


def test_each_sample_verifies_and_yields_a_fresh_key_and_the_type(rsa_pair: RsaPair) -> None:
    settings = Settings(sources=_tables(rsa_pair))
    receiver = Receiver(settings)
    now = time.time()
    for source in settings.sources:
        keys = set()
        for _ in range(2):
            sample = build_sample(
                source,
                url=f"http://10.0.0.5:8000/webhooks/{source.name}",
                now=now,
                event_type="thing.happened",
            )
            request = WebhookRequest("POST", sample.url, sample.headers, sample.body)
            source_verifier(source).verify(request, now=now)  # raises if it does not verify
            key, event_type = receiver.sources[source.name].extraction.extract(request)
            assert key is not None, source.name
            keys.add(key)
            if receiver.sources[source.name].extraction.type_specs:
                assert event_type == "thing.happened", source.name
        assert len(keys) == 2, f"{source.name}: two sends must be two events"


def test_the_sample_table_and_overrides_are_honoured(rsa_pair: RsaPair) -> None:
    settings = Settings(sources=_tables(rsa_pair))
    source = settings.source("custom")
    assert source is not None
    sample = build_sample(
        source, url="http://x/webhooks/custom", now=time.time(), msg_id="d-1", event_type="k"
    )
    assert b'"note":"mine"' in sample.body
    assert b'"delivery":"d-1"' in sample.body
    assert sample.headers["x-kind"] == "k"


@pytest.mark.parametrize("missing", ["alipay", "wechatpay"])
def test_an_asymmetric_source_without_a_private_key_cannot_send(
    rsa_pair: RsaPair, missing: str
) -> None:
    from inbox import ConfigError

    tables = [dict(t) for t in source_tables(rsa_pair) if t["name"] == missing]
    tables[0].pop("private_key")
    [source] = Settings(sources=tables).sources
    with pytest.raises(ConfigError, match="private_key"):
        build_sample(source, url="http://x", now=time.time())


# What @shopify/shopify-api's webhooks.validate() requires before it accepts a delivery
# (Shopify/shopify-app-js, packages/apps/shopify-api/lib/webhooks/validate.ts,
# checkWebhooksHeaders; it answers `missing_headers` otherwise), and the two more that
# Shopify's "Webhooks delivery structure" page lists on every delivery.
SHOPIFY_REQUIRED = (
    "x-shopify-hmac-sha256",
    "x-shopify-topic",
    "x-shopify-shop-domain",
    "x-shopify-api-version",
    "x-shopify-webhook-id",
)
SHOPIFY_ALSO_SENT = ("x-shopify-triggered-at", "x-shopify-event-id")


def test_a_shopify_send_carries_the_headers_a_real_delivery_does(rsa_pair: RsaPair) -> None:
    source = Settings(sources=_tables(rsa_pair)).source("shopify")
    assert source is not None
    now = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    sample = build_sample(
        source, url="http://x/webhooks/shopify", now=now, event_type="orders/paid"
    )
    missing = [h for h in (*SHOPIFY_REQUIRED, *SHOPIFY_ALSO_SENT) if not sample.headers.get(h)]
    assert missing == []
    assert sample.headers["x-shopify-topic"] == "orders/paid"
    assert sample.headers["x-shopify-shop-domain"].endswith(".myshopify.com")
    assert re.fullmatch(r"20\d\d-(01|04|07|10)", sample.headers["x-shopify-api-version"])
    triggered = datetime.datetime.fromisoformat(sample.headers["x-shopify-triggered-at"])
    assert triggered == datetime.datetime.fromtimestamp(now, datetime.UTC)
    assert sample.headers["x-shopify-event-id"] == sample.key
    assert sample.headers["x-shopify-webhook-id"] == sample.key
