"""HubSpot's v3 signature against hubspot-api-client's ``Signature``: it signs and we
accept, and what ``inbox send`` posts it accepts. Its ``is_valid`` checks the timestamp
against the wall clock, so these tests sign now."""

from __future__ import annotations

import json
import time

import pytest
from hubspot.utils.signature import Signature

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

SECRET = "hubspot-client-secret"
# What `received` posts to; HubSpot signs the URI it calls, given here as the public URL.
URL = "https://hooks.example.com/webhooks/src"


def _delivery(attempt: int) -> bytes:
    event = {
        "eventId": 1773542412,
        "subscriptionId": 4068571,
        "portalId": 62515,
        "occurredAt": 1700000000000,
        "subscriptionType": "contact.creation",
        "attemptNumber": attempt,
        "objectId": 123,
    }
    return json.dumps([event]).encode()


@proves("hubspot", "sdk-signs")
def test_a_delivery_signed_by_hubspots_library_verifies_and_keeps_its_key() -> None:
    timestamp = str(int(time.time() * 1000))
    keys = set()
    for attempt in (0, 1):  # a retry: other bytes, the same event
        body = _delivery(attempt)
        signature = Signature.get_signature(SECRET, body.decode(), "v3", URL, "POST", timestamp)
        headers = {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": timestamp}
        key, event_type = received(
            "hubspot", headers, body, now=time.time(), secrets=["old", SECRET], public_url=URL
        )
        assert event_type == "contact.creation"
        keys.add(key)
    assert keys == {"1773542412"}
    with pytest.raises(VerificationError, match="bad_signature"):
        received(
            "hubspot",
            headers,
            body,
            now=time.time(),
            secrets=[SECRET],
            public_url=URL + "?other=1",
        )
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("hubspot", headers, body, now=time.time() + 301, secrets=[SECRET])


@proves("hubspot", "sdk-verifies")
def test_what_inbox_send_posts_as_hubspot_verifies_in_its_library() -> None:
    public = "https://api.acme.com/hubspot?portal=62515"
    sample = sent("hubspot", now=time.time(), secrets=[SECRET], public_url=public)
    h = sample.headers

    def accepts(body: bytes, uri: str) -> bool:
        return Signature.is_valid(
            h["x-hubspot-signature-v3"],
            SECRET,
            body.decode(),
            http_uri=uri,
            signature_version="v3",
            timestamp=h["x-hubspot-request-timestamp"],
        )

    assert accepts(sample.body, public)
    assert not accepts(sample.body + b" ", public)
    assert not accepts(sample.body, URL)
    [event] = json.loads(sample.body)
    assert event["eventId"] == sample.key


def test_the_uri_is_signed_with_the_escapes_hubspot_decodes() -> None:
    # HubSpot's v3 page: %3A, %2F, %3F, %40, ... in the URI are decoded before signing.
    timestamp = str(int(time.time() * 1000))
    body = _delivery(0)
    decoded = URL + "?next=https://x/y"
    signature = Signature.get_signature(SECRET, body.decode(), "v3", decoded, "POST", timestamp)
    headers = {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": timestamp}
    found = received(
        "hubspot",
        headers,
        body,
        now=time.time(),
        secrets=[SECRET],
        public_url=URL + "?next=https%3A%2F%2Fx%2Fy",
    )
    assert found[0] == "1773542412"
