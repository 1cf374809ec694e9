"""Schemes without an SDK that verifies in Python: Intercom, Typeform, Vercel, Bitbucket,
Sentry (an HMAC of the body), Calendly and Zendesk (a signed timestamp), Linear (the time in
the signed body). Each is checked against a second implementation written here from the
provider's docs page, named by each test."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000


def mac(secret: str, content: bytes, algorithm: str = "sha256") -> bytes:
    return hmac.new(secret.encode(), content, algorithm).digest()


@proves("intercom", "docs-twin")
def test_intercom_as_the_docs_describe() -> None:
    # https://developers.intercom.com/docs/references/webhooks/webhook-models: notifications
    # carry X-Hub-Signature, "sha1=" and the hex HMAC-SHA1 of the body under the client secret.
    body = b'{"type":"notification_event","topic":"contact.user.created","id":"notif_1"}'
    headers = {"X-Hub-Signature": "sha1=" + mac("ic-secret", body, "sha1").hex()}
    found = received("intercom", headers, body, now=NOW, secrets=["old", "ic-secret"])
    assert found == ("notif_1", "contact.user.created")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("intercom", headers, body + b"\n", now=NOW, secrets=["ic-secret"])


@proves("typeform", "docs-twin")
def test_typeform_as_the_docs_describe() -> None:
    # https://www.typeform.com/developers/webhooks/secure-your-webhooks/: Typeform-Signature
    # is "sha256=" and the base64 (not hex) HMAC-SHA256 of the raw body.
    body = b'{"event_id":"01HX","event_type":"form_response","form_response":{}}'
    signature = base64.b64encode(mac("tf-secret", body)).decode()
    headers = {"Typeform-Signature": "sha256=" + signature}
    assert received("typeform", headers, body, now=NOW, secrets=["tf-secret"]) == (
        "01HX",
        "form_response",
    )
    hex_instead = {"Typeform-Signature": "sha256=" + mac("tf-secret", body).hex()}
    with pytest.raises(VerificationError):
        received("typeform", hex_instead, body, now=NOW, secrets=["tf-secret"])


@proves("vercel", "docs-twin")
def test_vercel_as_the_docs_describe() -> None:
    # https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks: x-vercel-signature is
    # the hex HMAC-SHA1 of the raw body under the webhook's secret.
    body = b'{"id":"evt_1","type":"deployment.succeeded","createdAt":1700000000000}'
    headers = {"x-vercel-signature": mac("vc-secret", body, "sha1").hex()}
    found = received("vercel", headers, body, now=NOW, secrets=["vc-secret", "old"])
    assert found == ("evt_1", "deployment.succeeded")


@proves("bitbucket", "docs-twin")
def test_bitbucket_as_the_docs_describe() -> None:
    # https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/: with a secret,
    # X-Hub-Signature is "sha256=" and the hex HMAC-SHA256 of the body; X-Request-UUID and
    # X-Event-Key name the delivery and the event.
    body = b'{"repository":{"full_name":"acme/inbox"},"push":{"changes":[]}}'
    headers = {
        "X-Hub-Signature": "sha256=" + mac("bb-secret", body).hex(),
        "X-Request-UUID": "5f1c3e2a-0000-4000-8000-000000000001",
        "X-Event-Key": "repo:push",
    }
    found = received("bitbucket", headers, body, now=NOW, secrets=["bb-secret"])
    assert found == ("5f1c3e2a-0000-4000-8000-000000000001", "repo:push")
    data_center = {**headers, "X-Request-Id": "dc-1"}
    del data_center["X-Request-UUID"]
    assert received("bitbucket", data_center, body, now=NOW, secrets=["bb-secret"])[0] == "dc-1"


@proves("sentry", "docs-twin")
def test_sentry_as_the_docs_describe() -> None:
    # https://docs.sentry.io/integrations/integration-platform/webhooks/: Sentry-Hook-Signature
    # is the hex HMAC-SHA256 of the body under the client secret; Request-ID and
    # Sentry-Hook-Resource travel beside it.
    body = b'{"action":"created","data":{"issue":{"id":"1"}},"installation":{"uuid":"u"}}'
    headers = {
        "Sentry-Hook-Signature": mac("sn-secret", body).hex(),
        "Sentry-Hook-Resource": "issue",
        "Sentry-Hook-Timestamp": str(NOW),
        "Request-ID": "8a4b7c6d-0000-4000-8000-000000000002",
    }
    found = received("sentry", headers, body, now=NOW, secrets=["sn-secret"])
    assert found == ("8a4b7c6d-0000-4000-8000-000000000002", "issue")


@proves("calendly", "docs-twin")
def test_calendly_as_the_docs_describe() -> None:
    # https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures:
    # Calendly-Webhook-Signature is "t=<unix>,v1=<hex>", the HMAC-SHA256 of "{t}.{body}";
    # the docs' example rejects a t older than three minutes.
    body = b'{"event":"invitee.created","created_at":"2023-11-14T22:13:20Z","payload":{}}'
    header = f"t={NOW},v1=" + mac("cal-key", f"{NOW}.".encode() + body).hex()
    headers = {"Calendly-Webhook-Signature": header}
    found = received("calendly", headers, body, now=NOW + 180, secrets=["cal-key"])
    assert found == (hashlib.sha256(body).hexdigest(), "invitee.created")
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received(
            "calendly", headers, body, now=NOW + 181, secrets=["cal-key"], tolerance_seconds=180
        )


def zendesk_headers(secret: str, timestamp: str, body: bytes) -> dict[str, str]:
    signature = base64.b64encode(mac(secret, timestamp.encode() + body)).decode()
    return {
        "X-Zendesk-Webhook-Signature": signature,
        "X-Zendesk-Webhook-Signature-Timestamp": timestamp,
        "X-Zendesk-Webhook-Invocation-Id": "8350205582",
    }


@proves("zendesk", "docs-twin")
def test_zendesk_as_the_docs_describe() -> None:
    # https://developer.zendesk.com/documentation/webhooks/verifying/: the signature is
    # base64(HMAC-SHA256(timestamp + body)) under the signing secret, the timestamp the
    # X-Zendesk-Webhook-Signature-Timestamp header as sent (ISO 8601).
    body = b'{"type":"zen:event-type:ticket.created","detail":{"id":"1"}}'
    secret = "dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ=="  # used as text, not decoded
    headers = zendesk_headers(secret, "2023-11-14T22:13:20Z", body)
    found = received("zendesk", headers, body, now=NOW, secrets=["old", secret])
    assert found == ("8350205582", "zen:event-type:ticket.created")
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("zendesk", headers, body, now=NOW + 301, secrets=[secret])
    loose = zendesk_headers(secret, "2023-11-14 22:13:20", body)
    with pytest.raises(VerificationError, match="malformed_header"):
        received("zendesk", loose, body, now=NOW, secrets=[secret])


def linear_body(millis: int) -> bytes:
    document = {"action": "create", "type": "Issue", "data": {"id": "i-1"}}
    return json.dumps({**document, "webhookTimestamp": millis}).encode()


@proves("linear", "docs-twin")
def test_linear_as_the_docs_describe() -> None:
    # https://linear.app/developers/webhooks: Linear-Signature is the hex HMAC-SHA256 of the
    # raw body; the body's webhookTimestamp (milliseconds) should be within a minute.
    body = linear_body(NOW * 1000)
    headers = {
        "Linear-Signature": mac("lin-secret", body).hex(),
        "Linear-Delivery": "234d1a4e-0000-4000-8000-000000000003",
        "Linear-Event": "Issue",
    }
    found = received("linear", headers, body, now=NOW + 60, secrets=["lin-secret"])
    assert found == ("234d1a4e-0000-4000-8000-000000000003", "Issue")
    # The minute is the default; the Linear-Timestamp header (which @linear/sdk prefers) is
    # not signed, so a fresh one does not revive a stale body.
    fresh = {**headers, "Linear-Timestamp": str((NOW + 61) * 1000)}
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("linear", fresh, body, now=NOW + 61, secrets=["lin-secret"])
    with pytest.raises(VerificationError, match="bad_signature"):
        received("linear", headers, linear_body(NOW * 1000 + 1), now=NOW, secrets=["lin-secret"])


def test_linear_reads_the_time_from_signed_bytes_only() -> None:
    unsigned = b'{"type":"Issue"}'
    headers = {"Linear-Signature": mac("s", unsigned).hex(), "Linear-Delivery": "d"}
    with pytest.raises(VerificationError, match="malformed_body"):
        received("linear", headers, unsigned, now=NOW, secrets=["s"])
    with pytest.raises(VerificationError, match="bad_signature"):
        received("linear", {**headers, "Linear-Signature": "00"}, unsigned, now=NOW, secrets=["s"])


@pytest.mark.parametrize(
    "scheme",
    ["intercom", "typeform", "vercel", "bitbucket", "sentry", "calendly", "zendesk", "linear"],
)
def test_inbox_send_verifies_with_a_fresh_key_and_the_type(scheme: str) -> None:
    now = time.time()
    keys = set()
    for _ in range(2):
        sample = sent(scheme, now=now, secrets=["s"])
        key, event_type = received(scheme, sample.headers, sample.body, now=now, secrets=["s"])
        assert event_type is not None
        keys.add(key)
    assert len(keys) == 2
