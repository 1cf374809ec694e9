"""Jira Cloud and DocuSign Connect: neither publishes a Python library that verifies, so
each is proven by a second implementation written here from its docs page, signing what we
accept and accepting what ``inbox send`` posts."""

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
JIRA_SECRET = "jira-webhook-secret"
DOCUSIGN_KEY = "hA5kZ0n9Yp1yk3J0c2FmR3VtNnlwQkZ1eVZ2cHJRd0k="


# -- Jira: https://developer.atlassian.com/cloud/jira/platform/webhooks/ ------------------
# ("Secure admin webhooks": X-Hub-Signature is "method=signature", sha256 and the hex
# HMAC of the body under the webhook's secret; X-Atlassian-Webhook-Identifier is the same
# on every retry of a delivery.)


def jira_docs_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@proves("jira", "docs-twin")
def test_a_jira_event_signed_from_the_docs_verifies() -> None:
    body = b'{"timestamp":1700000000123,"webhookEvent":"jira:issue_updated","issue":{}}'
    headers = {
        "X-Hub-Signature": jira_docs_signature(JIRA_SECRET, body),
        "X-Atlassian-Webhook-Identifier": "91210c1a-f0e3-4f52-9dcc-0b1e3d5c6d7e",
        "X-Atlassian-Webhook-Retry": "1",
    }
    found = received("jira", headers, body, now=NOW, secrets=["retired", JIRA_SECRET])
    assert found == ("91210c1a-f0e3-4f52-9dcc-0b1e3d5c6d7e", "jira:issue_updated")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("jira", headers, body + b" ", now=NOW, secrets=[JIRA_SECRET])


@proves("jira", "docs-twin")
def test_what_inbox_send_posts_as_jira_verifies_by_the_docs() -> None:
    sample = sent("jira", now=time.time(), secrets=[JIRA_SECRET])
    expected = jira_docs_signature(JIRA_SECRET, sample.body)
    assert hmac.compare_digest(sample.headers["x-hub-signature"], expected)
    assert sample.headers["x-atlassian-webhook-identifier"] == sample.key
    assert json.loads(sample.body)["webhookEvent"] == "jira:issue_created"


# -- DocuSign: https://developers.docusign.com/platform/webhooks/connect/validate/ -------
# (The ComputeHash of the page's Python example: the base64 HMAC-SHA256 of the payload
# under the key's text, compared with each X-DocuSign-Signature-N header.)


def docusign_compute_hash(secret: str, payload: bytes) -> str:
    digest = hmac.new(str.encode(secret), msg=payload, digestmod=hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


DOCUSIGN_BODY = json.dumps(
    {
        "event": "envelope-completed",
        "apiVersion": "v2.1",
        "uri": "/restapi/v2.1/accounts/a1/envelopes/93be49ab-3f2c-4ff4-a1e6-0a3d0c6d1b6a",
        "retryCount": 0,
        "configurationId": 10003561,
        "generatedDateTime": "2023-11-14T22:13:20.6030000Z",
        "data": {"accountId": "a1", "envelopeId": "93be49ab-3f2c-4ff4-a1e6-0a3d0c6d1b6a"},
    }
).encode()


@proves("docusign", "docs-twin")
def test_a_connect_message_signed_from_the_docs_verifies_under_any_of_its_keys() -> None:
    other_key = "bm90LXRoZS1rZXktaW4tdGhlLXNvdXJjZQ=="
    headers = {
        # The account has two keys: the second header is the one the source holds.
        "X-DocuSign-Signature-1": docusign_compute_hash(other_key, DOCUSIGN_BODY),
        "X-DocuSign-Signature-2": docusign_compute_hash(DOCUSIGN_KEY, DOCUSIGN_BODY),
    }
    found = received("docusign", headers, DOCUSIGN_BODY, now=NOW, secrets=[DOCUSIGN_KEY])
    assert found == (hashlib.sha256(DOCUSIGN_BODY).hexdigest(), "envelope-completed")
    rotated = received("docusign", headers, DOCUSIGN_BODY, now=NOW, secrets=["new", other_key])
    assert rotated[1] == "envelope-completed"
    with pytest.raises(VerificationError, match="bad_signature"):
        received("docusign", headers, DOCUSIGN_BODY + b" ", now=NOW, secrets=[DOCUSIGN_KEY])
    # A retry is a new body (retryCount grows), so a new key: see the record's retries.
    retry = DOCUSIGN_BODY.replace(b'"retryCount": 0', b'"retryCount": 1')
    signed_retry = {"X-DocuSign-Signature-1": docusign_compute_hash(DOCUSIGN_KEY, retry)}
    again = received("docusign", signed_retry, retry, now=NOW, secrets=[DOCUSIGN_KEY])
    assert again[0] != found[0]
    unnumbered = {"X-DocuSign-Signature": headers["X-DocuSign-Signature-2"]}
    with pytest.raises(VerificationError, match="missing_header"):
        received("docusign", unnumbered, DOCUSIGN_BODY, now=NOW, secrets=[DOCUSIGN_KEY])


@proves("docusign", "docs-twin")
def test_what_inbox_send_posts_as_docusign_verifies_by_the_docs() -> None:
    sample = sent("docusign", now=time.time(), secrets=[DOCUSIGN_KEY])
    expected = docusign_compute_hash(DOCUSIGN_KEY, sample.body)
    assert hmac.compare_digest(sample.headers["x-docusign-signature-1"], expected)
    assert json.loads(sample.body)["event"] == "envelope-completed"
