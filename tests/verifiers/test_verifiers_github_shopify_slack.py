"""The body-only HMAC schemes (GitHub, Shopify) and Slack, with their published vectors."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier
from inbox._receiving.extract import extraction_for
from tests.verifiers._proofs import proves

# GitHub's documented example ("Validating webhook deliveries", docs.github.com).
GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

# slackapi/python-slack-sdk tests/signature/test_signature_verifier.py (itself taken from
# https://api.slack.com/authentication/verifying-requests-from-slack).
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow"
    b"&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner"
    b"&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands"
    b"%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
SLACK_TIMESTAMP = 1531420618
SLACK_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def req(headers: dict[str, str], body: bytes) -> WebhookRequest:
    return WebhookRequest("POST", "https://example.com/webhooks/x", headers, body)


def reason(name: str, request: WebhookRequest, secret: str, *, now: float = 0) -> str:
    with pytest.raises(VerificationError) as info:
        build_verifier(name, secrets=[secret]).verify(request, now=now)
    return info.value.reason


# --- GitHub -------------------------------------------------------------------------------


@proves("github", "vectors")
def test_github_documented_vector_verifies() -> None:
    request = req({"x-hub-signature-256": GITHUB_SIGNATURE}, GITHUB_BODY)
    build_verifier("github", secrets=[GITHUB_SECRET]).verify(request, now=0)


def test_github_signer_reproduces_the_documented_vector() -> None:
    signer = build_signer("github", secrets=[GITHUB_SECRET])
    headers = signer.sign(body=GITHUB_BODY, url="", now=0, msg_id="d1")
    assert headers["x-hub-signature-256"] == GITHUB_SIGNATURE
    assert headers["x-github-delivery"] == "d1"


def test_github_changed_body_fails() -> None:
    request = req({"x-hub-signature-256": GITHUB_SIGNATURE}, b"Hello, World?")
    assert reason("github", request, GITHUB_SECRET) == "bad_signature"


@pytest.mark.parametrize("header", ["757107ea", "sha1=757107ea", "SHA256=757107ea"])
def test_github_header_without_sha256_prefix_is_malformed(header: str) -> None:
    request = req({"x-hub-signature-256": header}, GITHUB_BODY)
    assert reason("github", request, GITHUB_SECRET) == "malformed_header"


def test_github_legacy_sha1_header_alone_is_missing() -> None:
    request = req({"x-hub-signature": "sha1=abc"}, GITHUB_BODY)
    assert reason("github", request, GITHUB_SECRET) == "missing_header"


# --- Shopify ------------------------------------------------------------------------------


@proves("shopify", "docs-twin")
def test_shopify_signature_is_base64_of_the_body_hmac() -> None:
    body = b'{"id":820982911946154508,"email":"jon@example.com"}'
    expected = base64.b64encode(hmac.new(b"shpss_x", body, hashlib.sha256).digest()).decode()
    request = req({"x-shopify-hmac-sha256": expected}, body)
    build_verifier("shopify", secrets=["shpss_x"]).verify(request, now=0)
    unpadded = req({"x-shopify-hmac-sha256": expected.rstrip("=")}, body)
    build_verifier("shopify", secrets=["shpss_x"]).verify(unpadded, now=0)


def test_shopify_hex_instead_of_base64_fails() -> None:
    body = b"{}"
    hex_value = hmac.new(b"s", body, hashlib.sha256).hexdigest()
    request = req({"x-shopify-hmac-sha256": hex_value}, body)
    assert reason("shopify", request, "s") == "bad_signature"


def test_shopify_non_base64_is_malformed() -> None:
    request = req({"x-shopify-hmac-sha256": "not base64!"}, b"{}")
    assert reason("shopify", request, "s") == "malformed_header"


# Shopify Events (developer preview) send their headers without the X- prefix; Shopify's
# library detects them by shopify-hmac-sha256 and keys on shopify-event-id (Shopify/shopify-app-js,
# packages/apps/shopify-api/lib/webhooks/header-names.ts; shopify.dev "Events delivery structure").
EVENTS_BODY = b'{"topic":"Product","action":"update","handle":"product-sync"}'
EVENTS_SECRET = "shpss_x"


def events_headers(body: bytes = EVENTS_BODY, signed_with: str = EVENTS_SECRET) -> dict[str, str]:
    digest = hmac.new(signed_with.encode(), body, hashlib.sha256).digest()
    return {
        "shopify-hmac-sha256": base64.b64encode(digest).decode(),
        "shopify-topic": "Product",
        "shopify-shop-domain": "acme.myshopify.com",
        "shopify-api-version": "unstable",
        "shopify-event-id": "0f7e4c1a-7d57-4b4e-9d7a-3a3b9e0c1d2e",
        "shopify-action": "update",
    }


def test_shopify_events_delivery_verifies() -> None:
    build_verifier("shopify", secrets=["shpss_x"]).verify(req(events_headers(), EVENTS_BODY), now=0)


def test_shopify_events_delivery_with_a_changed_body_fails() -> None:
    request = req(events_headers(), EVENTS_BODY.replace(b"update", b"delete"))
    assert reason("shopify", request, "shpss_x") == "bad_signature"


def test_shopify_events_delivery_under_another_secret_fails() -> None:
    request = req(events_headers(signed_with="shpss_other"), EVENTS_BODY)
    assert reason("shopify", request, "shpss_x") == "bad_signature"


def test_shopify_events_delivery_keys_on_its_event_id_and_types_on_its_topic() -> None:
    key, event_type = extraction_for("shopify").extract(req(events_headers(), EVENTS_BODY))
    assert (key, event_type) == ("0f7e4c1a-7d57-4b4e-9d7a-3a3b9e0c1d2e", "Product")


# --- Slack --------------------------------------------------------------------------------


def slack_request(signature: str = SLACK_SIGNATURE, body: bytes = SLACK_BODY) -> WebhookRequest:
    return req(
        {"x-slack-request-timestamp": str(SLACK_TIMESTAMP), "x-slack-signature": signature}, body
    )


@proves("slack", "vectors")
def test_slack_sdk_vector_verifies() -> None:
    build_verifier("slack", secrets=[SLACK_SECRET]).verify(slack_request(), now=SLACK_TIMESTAMP)


def test_slack_signer_reproduces_the_sdk_vector() -> None:
    signer = build_signer("slack", secrets=[SLACK_SECRET])
    headers = signer.sign(body=SLACK_BODY, url="", now=SLACK_TIMESTAMP, msg_id="m")
    assert headers["x-slack-signature"] == SLACK_SIGNATURE


def test_slack_sdk_vector_with_modified_body_fails() -> None:
    request = slack_request(body=SLACK_BODY + b"------")
    assert reason("slack", request, SLACK_SECRET, now=SLACK_TIMESTAMP) == "bad_signature"


def test_slack_sdk_vector_is_expired_today() -> None:
    # test_is_valid_request_expiration: the vector is from 2018, outside any window now.
    assert reason("slack", slack_request(), SLACK_SECRET, now=1_700_000_000) == "timestamp_too_old"


def test_slack_unknown_version_is_unsupported() -> None:
    request = slack_request(SLACK_SIGNATURE.replace("v0=", "v1="))
    assert reason("slack", request, SLACK_SECRET, now=SLACK_TIMESTAMP) == "no_supported_signature"


def test_slack_signature_without_version_is_malformed() -> None:
    request = slack_request(SLACK_SIGNATURE.removeprefix("v0="))
    assert reason("slack", request, SLACK_SECRET, now=SLACK_TIMESTAMP) == "malformed_header"
