"""Braintree, proven with its SDK both ways: ``WebhookTesting.sample_notification`` signs and
we accept; what ``inbox send`` posts, ``WebhookNotification.parse`` accepts and reads."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

import braintree
import pytest

from inbox._core.errors import VerificationError
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
