"""``WebhookRequest`` helpers, and a property: any change to a signed body is caught."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier


def test_query_params_are_decoded_and_keep_repeats() -> None:
    request = WebhookRequest("POST", "https://x/h?a=1&b=%20two&a=3&empty=", {}, b"")
    assert request.query_params == [("a", "1"), ("b", " two"), ("a", "3"), ("empty", "")]


def test_form_params_need_the_form_content_type() -> None:
    body = b"a=1&b=%E6%B5%8B+x"
    form = {"content-type": "application/x-www-form-urlencoded; charset=UTF-8"}
    assert WebhookRequest("POST", "https://x/h", form, body).form_params == [
        ("a", "1"),
        ("b", "测 x"),
    ]
    assert (
        WebhookRequest(
            "POST", "https://x/h", {"content-type": "application/json"}, body
        ).form_params
        == []
    )


def test_form_params_of_undecodable_body_are_empty() -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}
    assert WebhookRequest("POST", "https://x/h", form, b"a=%FF%FE").form_params == []
    assert WebhookRequest("POST", "https://x/h", form, "a=é".encode()).form_params == []


SCHEMES = ["standard-webhooks", "stripe", "github", "shopify", "slack"]
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NOW = 1_700_000_000.0


@settings(max_examples=50, deadline=None)
@given(
    scheme=st.sampled_from(SCHEMES),
    body=st.binary(min_size=1, max_size=256),
    position=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
)
def test_any_single_byte_change_is_caught(
    scheme: str, body: bytes, position: int, flip: int
) -> None:
    headers = build_signer(scheme, secrets=[SECRET]).sign(body=body, url="", now=NOW, msg_id="m")
    verifier = build_verifier(scheme, secrets=[SECRET])
    verifier.verify(WebhookRequest("POST", "https://x/h", headers, body), now=NOW)
    index = position % len(body)
    changed = body[:index] + bytes([body[index] ^ flip]) + body[index + 1 :]
    with pytest.raises(VerificationError) as info:
        verifier.verify(WebhookRequest("POST", "https://x/h", headers, changed), now=NOW)
    assert info.value.reason == "bad_signature"
