"""Resend and Clerk deliver through Svix (``svix-*`` headers), and both tell their users to
verify with the ``svix`` library: it signs, we accept; ``inbox send`` signs, it accepts."""

from __future__ import annotations

import datetime
import time

import pytest
from svix.webhooks import Webhook, WebhookVerificationError

from inbox._core.errors import VerificationError
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OLD = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="
NOW = 1_700_000_000
RESEND_BODY = (
    b'{"type":"email.bounced","created_at":"2024-11-22T23:41:12Z","data":{"to":["a@b.c"]}}'
)
CLERK_BODY = (
    b'{"type":"user.created","object":"event","data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC"}}'
)


def svix_signed(body: bytes, msg_id: str = "msg_1", secret: str = SECRET) -> dict[str, str]:
    when = datetime.datetime.fromtimestamp(NOW, datetime.UTC)
    signature = Webhook(secret).sign(msg_id, when, body.decode())
    return {"svix-id": msg_id, "svix-timestamp": str(NOW), "svix-signature": signature}


@proves("resend", "sdk-signs")
def test_a_resend_delivery_signed_by_svix_verifies() -> None:
    key = received("resend", svix_signed(RESEND_BODY), RESEND_BODY, now=NOW, secrets=[SECRET])
    assert key == ("msg_1", "email.bounced")


@proves("clerk", "sdk-signs")
def test_a_clerk_delivery_signed_by_svix_verifies() -> None:
    key = received("clerk", svix_signed(CLERK_BODY), CLERK_BODY, now=NOW, secrets=[SECRET])
    assert key == ("msg_1", "user.created")


@pytest.mark.parametrize("scheme", ["resend", "clerk"])
def test_rotation_and_tampering(scheme: str) -> None:
    headers = svix_signed(CLERK_BODY)
    received(scheme, headers, CLERK_BODY, now=NOW, secrets=[OLD, SECRET])
    with pytest.raises(VerificationError, match="bad_signature"):
        received(scheme, headers, CLERK_BODY + b" ", now=NOW, secrets=[SECRET])
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received(scheme, headers, CLERK_BODY, now=NOW + 301, secrets=[SECRET])


@proves("resend", "sdk-verifies")
def test_what_inbox_send_posts_as_resend_verifies_in_svix() -> None:
    sample = sent("resend", now=time.time(), secrets=[SECRET])
    assert set(sample.headers) >= {"svix-id", "svix-timestamp", "svix-signature"}
    Webhook(SECRET).verify(sample.body, sample.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(OLD).verify(sample.body, sample.headers)


@proves("clerk", "sdk-verifies")
def test_what_inbox_send_posts_as_clerk_verifies_in_svix() -> None:
    sample = sent("clerk", now=time.time(), secrets=[SECRET])
    Webhook(SECRET).verify(sample.body, sample.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(sample.body + b" ", sample.headers)
