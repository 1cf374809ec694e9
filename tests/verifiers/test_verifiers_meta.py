"""Meta (WhatsApp Cloud API and every Graph API webhook): Meta publishes no Python library
that verifies, so the scheme is proven by a second implementation written here from its
docs page, signing what we accept and accepting what ``inbox send`` posts; the GET
subscription handshake is answered from the record.

Docs: https://developers.facebook.com/docs/graph-api/webhooks/getting-started
(#validate-payloads and #verification-requests).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, provider
from inbox._providers._provider import GetHandshakeKeys
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000
APP_SECRET = "meta-app-secret"


def docs_signature(app_secret: str, payload: bytes) -> str:
    # "We sign all Event Notification payloads with a SHA256 signature and include the
    # signature in the request's X-Hub-Signature-256 header, preceded with sha256=":
    # the HMAC-SHA256 of the payload as received, under the app secret, lower-case hex.
    return "sha256=" + hmac.new(app_secret.encode(), payload, hashlib.sha256).hexdigest()


# The docs' WhatsApp text message notification, serialised as Meta does: non-ASCII escaped.
NOTIFICATION = json.dumps(
    {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"phone_number_id": "106540352242922"},
                            "messages": [
                                {
                                    "from": "16505551234",
                                    "id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFF",
                                    "timestamp": "1749416383",
                                    "type": "text",
                                    "text": {"body": "Grüße äöå"},
                                }
                            ],
                        },
                        "field": "messages",
                    }
                ],
            }
        ],
    },
    ensure_ascii=True,
).encode()


@proves("meta", "docs-twin")
def test_a_notification_signed_from_the_docs_verifies_under_either_secret() -> None:
    headers = {"X-Hub-Signature-256": docs_signature(APP_SECRET, NOTIFICATION)}
    found = received("meta", headers, NOTIFICATION, now=NOW, secrets=["retired", APP_SECRET])
    assert found == (hashlib.sha256(NOTIFICATION).hexdigest(), "messages")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("meta", headers, NOTIFICATION + b" ", now=NOW, secrets=[APP_SECRET])
    # The same JSON with the characters unescaped is other bytes: Meta signed the escapes.
    unescaped = json.dumps(json.loads(NOTIFICATION), ensure_ascii=False).encode()
    with pytest.raises(VerificationError, match="bad_signature"):
        received("meta", headers, unescaped, now=NOW, secrets=[APP_SECRET])


@proves("meta", "docs-twin")
def test_what_inbox_send_posts_as_meta_verifies_by_the_docs() -> None:
    sample = sent("meta", now=time.time(), secrets=[APP_SECRET])
    expected = docs_signature(APP_SECRET, sample.body)
    assert hmac.compare_digest(sample.headers["x-hub-signature-256"], expected)
    payload = json.loads(sample.body)
    assert payload["object"] == "whatsapp_business_account"
    assert payload["entry"][0]["changes"][0]["field"] == "messages"


def test_a_page_notification_is_typed_by_its_object() -> None:
    body = b'{"object":"page","entry":[{"id":"1","time":1700000000,"messaging":[]}]}'
    headers = {"x-hub-signature-256": docs_signature(APP_SECRET, body)}
    assert received("meta", headers, body, now=NOW, secrets=[APP_SECRET])[1] == "page"


def _get(query: str) -> WebhookRequest:
    return WebhookRequest("GET", "https://hooks.example.com/webhooks/wa?" + query, {}, b"")


def test_the_subscription_gets_its_challenge_back_only_with_the_token() -> None:
    subscribe = provider("meta").get_handshake
    assert subscribe is not None

    def refused(query: str, token: str | None) -> str:
        with pytest.raises(VerificationError) as info:
            subscribe(_get(query), GetHandshakeKeys(verify_token=token))
        return info.value.reason

    query = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock"
    assert subscribe(_get(query), GetHandshakeKeys(verify_token="meatyhamhock")) == "1158201444"
    assert refused(query, "another-token") == "bad_verify_token"
    assert refused(query, None) == "no_verify_token"  # a source with no token refuses them all
    assert refused(query.replace("subscribe", "unsubscribe"), "meatyhamhock") == "bad_verify_token"
    assert refused("hub.mode=subscribe&hub.verify_token=meatyhamhock", "x") == "bad_verify_token"
    assert refused("", "meatyhamhock") == "bad_verify_token"
