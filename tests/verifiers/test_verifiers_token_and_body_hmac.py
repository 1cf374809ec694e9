"""Schemes without an SDK that verifies: GitLab and Telegram (a shared token), Lemon Squeezy
and Coinbase Commerce (HMAC-SHA256 hex of the body). Each is checked against a second
implementation written here from the provider's docs page, named by each test."""

from __future__ import annotations

import hashlib
import hmac
import time

import pytest

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000


@proves("gitlab", "docs-twin")
def test_gitlab_token_as_the_docs_describe() -> None:
    # https://docs.gitlab.com/user/project/integrations/webhooks/: the secret token is sent
    # as X-Gitlab-Token; Idempotency-Key stays the same across retries.
    headers = {
        "X-Gitlab-Token": "tok-new",
        "X-Gitlab-Event": "Push Hook",
        "X-Gitlab-Event-UUID": "7a0f9b4e-1111-4a4a-9c9c-0123456789ab",
        "Idempotency-Key": "f6f0c1f8-2222-4b4b-8d8d-0123456789ab",
    }
    found = received("gitlab", headers, b"{}", now=NOW, secrets=["tok-old", "tok-new"])
    assert found == ("f6f0c1f8-2222-4b4b-8d8d-0123456789ab", "Push Hook")
    del headers["Idempotency-Key"]  # older GitLab
    found = received("gitlab", headers, b"{}", now=NOW, secrets=["tok-new"])
    assert found == ("7a0f9b4e-1111-4a4a-9c9c-0123456789ab", "Push Hook")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("gitlab", {**headers, "X-Gitlab-Token": "tok-ne"}, b"{}", now=NOW, secrets=["x"])
    with pytest.raises(VerificationError, match="missing_header"):
        received("gitlab", {"X-Gitlab-Event": "Push Hook"}, b"{}", now=NOW, secrets=["x"])


@proves("telegram", "docs-twin")
def test_telegram_secret_token_as_the_docs_describe() -> None:
    # https://core.telegram.org/bots/api#setwebhook: secret_token comes back in the
    # X-Telegram-Bot-Api-Secret-Token header of every update.
    body = b'{"update_id":10000,"message":{"message_id":1,"text":"/start"}}'
    headers = {"X-Telegram-Bot-Api-Secret-Token": "s3cr3t_-A"}
    assert received("telegram", headers, body, now=NOW, secrets=["s3cr3t_-A"]) == ("10000", None)
    with pytest.raises(VerificationError, match="bad_signature"):
        received("telegram", headers, body, now=NOW, secrets=["other"])


@pytest.mark.parametrize("scheme", ["gitlab", "telegram"])
def test_inbox_send_carries_the_token_and_a_fresh_key(scheme: str) -> None:
    keys = set()
    for _ in range(2):
        sample = sent(scheme, now=time.time(), secrets=["tok"])
        key, _type = received(scheme, sample.headers, sample.body, now=time.time(), secrets=["tok"])
        keys.add(key)
    assert len(keys) == 2


def body_hex(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@proves("lemonsqueezy", "docs-twin")
def test_lemonsqueezy_as_the_docs_describe() -> None:
    # https://docs.lemonsqueezy.com/help/webhooks/signing-requests: X-Signature is the
    # HMAC-SHA256 hex digest of the raw body under the signing secret.
    body = b'{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"1"}}'
    headers = {"X-Signature": body_hex("ls-secret", body), "X-Event-Name": "order_created"}
    key, event_type = received("lemonsqueezy", headers, body, now=NOW, secrets=["ls-secret"])
    assert key == hashlib.sha256(body).hexdigest()
    assert event_type == "order_created"
    with pytest.raises(VerificationError, match="bad_signature"):
        received("lemonsqueezy", headers, body, now=NOW, secrets=["other"])


def test_lemonsqueezy_sends_are_two_events() -> None:
    now = time.time()
    first, second = (sent("lemonsqueezy", now=now, secrets=["s"]) for _ in range(2))
    assert first.body != second.body


@proves("coinbase-commerce", "docs-twin")
def test_coinbase_commerce_as_the_docs_describe() -> None:
    # https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security: the
    # X-CC-Webhook-Signature header is the HMAC-SHA256 hex of the raw body.
    body = b'{"id":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created"}}'
    headers = {"X-CC-Webhook-Signature": body_hex("cc-secret", body)}
    found = received("coinbase-commerce", headers, body, now=NOW, secrets=["old", "cc-secret"])
    assert found == ("24934862-d980-46cb-9402-43c81b0cdba6", "charge:created")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("coinbase-commerce", headers, body + b"\n", now=NOW, secrets=["cc-secret"])
