"""Alipay RSA2 notifications. Alipay publishes no fixed key pair or vector, so these tests
build signatures with ``cryptography`` directly (not with our signer) from the documented
recipe, and check our signer and verifier against them."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlencode

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier, sign_request
from tests.verifiers._proofs import proves

PARAMS = {
    "notify_time": "2024-01-01 12:00:00",
    "notify_type": "trade_status_sync",
    "notify_id": "ac05099524730693a8b330c5ecf72da9786",
    "app_id": "2014072300007148",
    "charset": "utf-8",
    "version": "1.0",
    "trade_no": "2013112011001004330000121536",
    "out_trade_no": "6823789339978248",
    "trade_status": "TRADE_SUCCESS",
    "total_amount": "20.00",
    "subject": "测试 & 订单",  # non-ASCII, a space and a literal "&", all URL-encoded on the wire
    "buyer_logon_id": "",  # empty: skipped by the signed string
}
FORM = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}


def signed_string(params: dict[str, str]) -> bytes:
    """The documented recipe, written out independently of the implementation."""
    kept = {k: v for k, v in params.items() if k not in ("sign", "sign_type") and v != ""}
    return "&".join(f"{k}={kept[k]}" for k in sorted(kept)).encode("utf-8")


def alipay_body(
    private_pem: str, params: dict[str, str] = PARAMS, sign_type: str = "RSA2"
) -> bytes:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    signature = key.sign(signed_string(params), padding.PKCS1v15(), hashes.SHA256())
    sign = base64.b64encode(signature).decode()
    return urlencode({**params, "sign_type": sign_type, "sign": sign}).encode()


def verify(body: bytes, public_pems: list[str], headers: dict[str, str] = FORM) -> None:
    request = WebhookRequest("POST", "https://example.com/webhooks/alipay", headers, body)
    build_verifier("alipay", public_keys=public_pems).verify(request, now=0)


def reason(body: bytes, public_pems: list[str]) -> str:
    with pytest.raises(VerificationError) as info:
        verify(body, public_pems)
    return info.value.reason


@proves("alipay", "docs-twin")
def test_independently_signed_notification_verifies(rsa_pair: Any) -> None:
    verify(alipay_body(rsa_pair.private_pem), [rsa_pair.public_pem])


def test_certificate_instead_of_public_key(rsa_pair: Any) -> None:
    verify(alipay_body(rsa_pair.private_pem), [rsa_pair.certificate_pem])


def test_verifies_whatever_the_content_type_header(rsa_pair: Any) -> None:
    verify(alipay_body(rsa_pair.private_pem), [rsa_pair.public_pem], headers={})


def test_parameter_order_does_not_matter(rsa_pair: Any) -> None:
    body = alipay_body(rsa_pair.private_pem)
    reordered = "&".join(reversed(body.decode().split("&"))).encode()
    verify(reordered, [rsa_pair.public_pem])


def test_our_signer_matches_the_recipe(rsa_pair: Any) -> None:
    signer = build_signer("alipay", private_key=rsa_pair.private_pem)
    original = urlencode(PARAMS).encode()
    body, headers = sign_request(signer, body=original, url="", now=0, msg_id="m")
    assert headers["content-type"].startswith("application/x-www-form-urlencoded")
    # PKCS#1 v1.5 is deterministic: the same key and string give the same signature.
    expected_sign = dict(parse_qsl(alipay_body(rsa_pair.private_pem).decode()))["sign"]
    assert body == original + b"&sign_type=RSA2&sign=" + quote_plus(expected_sign).encode()
    verify(body, [rsa_pair.public_pem])


def test_empty_values_are_not_signed(rsa_pair: Any) -> None:
    """Adding or dropping an empty parameter does not change the signed string."""
    body = alipay_body(rsa_pair.private_pem)
    verify(body + b"&gmt_refund=", [rsa_pair.public_pem])
    verify(body.replace(b"buyer_logon_id=&", b""), [rsa_pair.public_pem])


def test_changed_amount_fails(rsa_pair: Any) -> None:
    body = alipay_body(rsa_pair.private_pem).replace(b"total_amount=20.00", b"total_amount=0.01")
    assert reason(body, [rsa_pair.public_pem]) == "bad_signature"


def test_decoded_values_are_signed_not_encoded_ones(rsa_pair: Any) -> None:
    """Signing the percent-encoded text instead of the decoded values must not verify."""
    encoded = {k: quote_plus(v) for k, v in PARAMS.items()}
    key = serialization.load_pem_private_key(rsa_pair.private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    wrong = key.sign(signed_string(encoded), padding.PKCS1v15(), hashes.SHA256())
    body = urlencode({**PARAMS, "sign_type": "RSA2", "sign": base64.b64encode(wrong).decode()})
    assert reason(body.encode(), [rsa_pair.public_pem]) == "bad_signature"


def test_legacy_rsa_sign_type_is_unsupported(rsa_pair: Any) -> None:
    body = alipay_body(rsa_pair.private_pem, sign_type="RSA")
    assert reason(body, [rsa_pair.public_pem]) == "no_supported_signature"


def test_missing_sign(rsa_pair: Any) -> None:
    assert reason(urlencode(PARAMS).encode(), [rsa_pair.public_pem]) == "missing_signature"


def test_repeated_parameter_is_refused(rsa_pair: Any) -> None:
    body = alipay_body(rsa_pair.private_pem) + b"&total_amount=0.01"
    assert reason(body, [rsa_pair.public_pem]) == "malformed_body"


def test_gbk_charset(rsa_pair: Any) -> None:
    params = {**PARAMS, "charset": "gbk"}
    kept = {k: v for k, v in params.items() if v}
    text = "&".join(f"{k}={kept[k]}" for k in sorted(kept)).encode("gbk")
    key = serialization.load_pem_private_key(rsa_pair.private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    sign = base64.b64encode(key.sign(text, padding.PKCS1v15(), hashes.SHA256())).decode()
    body = urlencode({**params, "sign_type": "RSA2", "sign": sign}, encoding="gbk").encode()
    verify(body, [rsa_pair.public_pem], headers={})


def test_signer_refuses_an_already_signed_body(rsa_pair: Any) -> None:
    signer = build_signer("alipay", private_key=rsa_pair.private_pem)
    with pytest.raises(ValueError, match="already"):
        sign_request(signer, body=alipay_body(rsa_pair.private_pem), url="", now=0, msg_id="m")
