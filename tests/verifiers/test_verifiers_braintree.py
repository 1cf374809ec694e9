"""Braintree, proven with its SDK both ways: ``WebhookTesting.sample_notification`` signs and
we accept; what ``inbox send`` posts, ``WebhookNotification.parse`` accepts and reads. The
``bt_challenge`` GET gets what ``WebhookNotification.verify`` answers."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

import braintree
import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, provider
from inbox._providers._provider import GetHandshakeKeys
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000
PUBLIC_KEY, PRIVATE_KEY = "integration_public_key", "integration_private_key"


def gateway(public_key: str = PUBLIC_KEY, private_key: str = PRIVATE_KEY) -> Any:
    config = braintree.Configuration(
        braintree.Environment.Sandbox,
        merchant_id="integration_merchant_id",
        public_key=public_key,
        private_key=private_key,
    )
    return braintree.BraintreeGateway(config)


@proves("braintree", "sdk-signs")
def test_a_notification_the_sdk_signs_verifies_under_either_private_key() -> None:
    kind = braintree.WebhookNotification.Kind.SubscriptionWentPastDue
    fields = gateway().webhook_testing.sample_notification(kind, "sub_1")
    body = urlencode(fields).encode()
    headers = {"content-type": "application/x-www-form-urlencoded"}
    key, event_type = received("braintree", headers, body, now=NOW, secrets=["old", PRIVATE_KEY])
    assert key is not None
    assert event_type is None  # the kind is inside the payload
    with pytest.raises(VerificationError, match="bad_signature"):
        received("braintree", headers, body, now=NOW, secrets=["another"])
    tampered = urlencode({**fields, "bt_payload": fields["bt_payload"].upper()}).encode()
    with pytest.raises(VerificationError, match="bad_signature"):
        received("braintree", headers, tampered, now=NOW, secrets=[PRIVATE_KEY])


@proves("braintree", "sdk-verifies")
def test_what_inbox_send_posts_parses_in_the_sdk() -> None:
    sample = sent(
        "braintree",
        now=time.time(),
        secrets=[PRIVATE_KEY],
        options={"public_key": PUBLIC_KEY},
    )
    fields = dict(parse_qsl(sample.body.decode()))
    notification = gateway().webhook_notification.parse(
        fields["bt_signature"], fields["bt_payload"]
    )
    assert notification.kind == "subscription_went_past_due"
    assert notification.subscription.id == sample.key
    with pytest.raises(braintree.exceptions.InvalidSignatureError):
        gateway(private_key="another").webhook_notification.parse(
            fields["bt_signature"], fields["bt_payload"]
        )


def _challenge(challenge: str, secrets: list[str], options: dict[str, object]) -> str:
    answer = provider("braintree").get_handshake
    assert answer is not None
    request = WebhookRequest("GET", f"https://x/webhooks/bt?bt_challenge={challenge}", {}, b"")
    return answer(request, GetHandshakeKeys(secrets=secrets, options=options))


def test_the_challenge_gets_the_sdks_answer_under_the_first_private_key() -> None:
    challenge = "20f9f8ed05f77439fe955c977e4c8a53"
    options = {"public_key": PUBLIC_KEY}
    expected = gateway().webhook_notification.verify(challenge)
    assert _challenge(challenge, [PRIVATE_KEY, "old"], options) == expected
    for bad, secrets, opts in [
        ("not-hex!", [PRIVATE_KEY], options),
        ("20f9f8ed05f7", [PRIVATE_KEY], options),  # shorter than the SDK accepts
        (challenge, [PRIVATE_KEY], {}),
        (challenge, [], options),
    ]:
        with pytest.raises(VerificationError):
            _challenge(bad, secrets, opts)


def test_an_answered_challenge_never_verifies_as_a_notification() -> None:
    challenge = "20f9f8ed05f77439fe955c977e4c8a53"
    signature = _challenge(challenge, [PRIVATE_KEY], {"public_key": PUBLIC_KEY})
    body = urlencode({"bt_signature": signature, "bt_payload": challenge}).encode()
    headers = {"content-type": "application/x-www-form-urlencoded"}
    with pytest.raises(VerificationError, match="malformed_body"):
        received("braintree", headers, body, now=NOW, secrets=[PRIVATE_KEY])
