"""Mailgun (a signed token, not a signed event) and Postmark (no signature: the basic auth its
docs advise). Each is checked against a second implementation written here from the
provider's docs page, named by each test."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import build_verifier
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000
MAILGUN_KEY = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
TOKEN = "a8ce0edb2dd8301dee6c"


def mailgun_body(event: str, *, key: str = MAILGUN_KEY, token: str = TOKEN) -> bytes:
    timestamp = str(NOW)
    signature = hmac.new(key.encode(), (timestamp + token).encode(), hashlib.sha256).hexdigest()
    document = {
        "signature": {"timestamp": timestamp, "token": token, "signature": signature},
        "event-data": {"event": event, "id": "CPgfbmQMTCKtHW6uIWtuVe"},
    }
    return json.dumps(document).encode()


@proves("mailgun", "docs-twin")
def test_mailgun_as_the_docs_describe() -> None:
    # https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks:
    # the body's signature object holds timestamp, token and signature, the hex
    # HMAC-SHA256 of timestamp + token under the HTTP webhook signing key.
    body = mailgun_body("delivered")
    found = received("mailgun", {}, body, now=NOW, secrets=["key-old", MAILGUN_KEY])
    assert found == (TOKEN, "delivered")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("mailgun", {}, body, now=NOW, secrets=["key-other"])
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("mailgun", {}, body, now=NOW + 301, secrets=[MAILGUN_KEY])


def test_a_mailgun_subaccount_verifies_under_the_primary_key() -> None:
    # The same page: a subaccount's delivery adds parent-signature, the same HMAC under the
    # primary account's key.
    document = json.loads(mailgun_body("delivered", key="key-subaccount"))
    parent = json.loads(mailgun_body("delivered"))["signature"]["signature"]
    document["signature"]["parent-signature"] = parent
    body = json.dumps(document).encode()
    assert received("mailgun", {}, body, now=NOW, secrets=[MAILGUN_KEY])[0] == TOKEN
    assert received("mailgun", {}, body, now=NOW, secrets=["key-subaccount"])[0] == TOKEN


def test_a_captured_mailgun_signature_is_one_event_whatever_the_body() -> None:
    # The event is not signed: a forged event under a captured signature verifies, and is
    # a duplicate of the delivery it was captured from (the signed token is the key).
    genuine = mailgun_body("delivered")
    forged = mailgun_body("complained")
    key_genuine, _ = received("mailgun", {}, genuine, now=NOW, secrets=[MAILGUN_KEY])
    key_forged, _ = received("mailgun", {}, forged, now=NOW, secrets=[MAILGUN_KEY])
    assert key_genuine == key_forged


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "malformed_body"),
        (b'{"event-data":{}}', "missing_signature"),
        (b'{"signature":{"timestamp":"1","token":""}}', "malformed_signature"),
    ],
)
def test_mailgun_refuses_a_body_without_its_signature(body: bytes, reason: str) -> None:
    with pytest.raises(VerificationError, match=reason):
        received("mailgun", {}, body, now=NOW, secrets=[MAILGUN_KEY])


def basic(credentials: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(credentials.encode()).decode()}


@proves("postmark", "docs-twin")
def test_postmark_basic_auth_as_the_docs_advise() -> None:
    # https://postmarkapp.com/developer/webhooks/webhooks-overview: webhooks are not signed;
    # put basic auth credentials in the webhook URL (https://user:pass@host/path), which
    # arrive as an Authorization: Basic header.
    body = b'{"RecordType":"Delivery","MessageID":"883953f4","Recipient":"a@b.c"}'
    secrets = ["postmark:old-pass", "postmark:new-pass"]
    found = received("postmark", basic("postmark:new-pass"), body, now=NOW, secrets=secrets)
    assert found == (hashlib.sha256(body).hexdigest(), "Delivery")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("postmark", basic("postmark:guess"), body, now=NOW, secrets=secrets)
    with pytest.raises(VerificationError, match="malformed_header"):
        received("postmark", {"Authorization": "Bearer x"}, body, now=NOW, secrets=secrets)
    with pytest.raises(VerificationError, match="missing_header"):
        received("postmark", {}, body, now=NOW, secrets=secrets)


def test_a_postmark_secret_is_a_user_password_pair() -> None:
    with pytest.raises(ValueError, match="user:password"):
        build_verifier("postmark", secrets=["just-a-password"])


@pytest.mark.parametrize(("scheme", "secret"), [("mailgun", MAILGUN_KEY), ("postmark", "u:p")])
def test_inbox_send_verifies_with_a_fresh_key_and_the_type(scheme: str, secret: str) -> None:
    now = time.time()
    keys = set()
    for _ in range(2):
        sample = sent(scheme, now=now, secrets=[secret])
        key, event_type = received(scheme, sample.headers, sample.body, now=now, secrets=[secret])
        assert event_type is not None
        keys.add(key)
    assert len(keys) == 2
