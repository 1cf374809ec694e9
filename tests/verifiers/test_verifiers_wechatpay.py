"""WeChat Pay API v3: serial-selected RSA keys, and the resource decryption helper.

The decryption vector is wechatpay-apiv3/wechatpay-go utils/aes_test.go (key
``testAPIv3Key0000``, nonce, associated data, ciphertext -> ``Hello World``, and its
negative cases). WeChat Pay publishes no signature vector with a usable key, so signatures
are made here with ``cryptography`` directly.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from inbox._core.errors import VerificationError
from inbox._providers import (
    WebhookRequest,
    build_signer,
    build_verifier,
    decrypt_wechatpay_resource,
)
from tests.verifiers._proofs import proves

# wechatpay-apiv3/wechatpay-go utils/aes_test.go
GO_KEY = "testAPIv3Key0000"
GO_CIPHERTEXT = "FsdXzxryWfKwvLJKf8LG/ToRPTRh8RN9wROC"
GO_NONCE = "wCq51qZv4Yfg"
GO_ASSOCIATED_DATA = "Dl56FrqWQJF1t9LtC3vEUsniZKvbqdR8"

NOW = 1_700_000_000
BODY = b'{"id":"EV-2018022511223320873","event_type":"TRANSACTION.SUCCESS","resource":{}}'
SERIAL = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"


def wechat_request(
    private_pem: str, *, serial: str = SERIAL, ts: int = NOW, body: bytes = BODY, **extra: str
) -> WebhookRequest:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    nonce = "fdasflkja484w"
    message = f"{ts}\n{nonce}\n".encode() + body + b"\n"
    signature = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    headers = {
        "wechatpay-timestamp": str(ts),
        "wechatpay-nonce": nonce,
        "wechatpay-signature": base64.b64encode(signature).decode(),
        "wechatpay-serial": serial,
        **extra,
    }
    return WebhookRequest("POST", "https://example.com/webhooks/wechatpay", headers, body)


def reason(request: WebhookRequest, keys: dict[str, str]) -> str:
    with pytest.raises(VerificationError) as info:
        build_verifier("wechatpay", public_keys=keys).verify(request, now=NOW)
    return info.value.reason


@proves("wechatpay", "docs-twin")
def test_independently_signed_notification_verifies(rsa_pair: Any) -> None:
    verifier = build_verifier("wechatpay", public_keys={SERIAL: rsa_pair.public_pem})
    verifier.verify(wechat_request(rsa_pair.private_pem), now=NOW)


def test_platform_certificate_as_key(rsa_pair: Any) -> None:
    verifier = build_verifier("wechatpay", public_keys={SERIAL: rsa_pair.certificate_pem})
    verifier.verify(wechat_request(rsa_pair.private_pem), now=NOW)


def test_key_is_chosen_by_serial(rsa_pair: Any, other_rsa_pair: Any) -> None:
    keys = {"OLD": other_rsa_pair.public_pem, SERIAL: rsa_pair.public_pem}
    build_verifier("wechatpay", public_keys=keys).verify(
        wechat_request(rsa_pair.private_pem), now=NOW
    )
    # Signed by the right key but naming the other serial: the other key is used, and fails.
    assert reason(wechat_request(rsa_pair.private_pem, serial="OLD"), keys) == "bad_signature"


def test_unknown_serial(rsa_pair: Any) -> None:
    request = wechat_request(rsa_pair.private_pem, serial="PUB_KEY_ID_0000")
    assert reason(request, {SERIAL: rsa_pair.public_pem}) == "unknown_key_serial"


def test_signature_type_other_than_rsa2048_is_unsupported(rsa_pair: Any) -> None:
    request = wechat_request(
        rsa_pair.private_pem, **{"wechatpay-signature-type": "WECHATPAY2-SM2-WITH-SM3"}
    )
    assert reason(request, {SERIAL: rsa_pair.public_pem}) == "no_supported_signature"


def test_signature_probe_fails(rsa_pair: Any) -> None:
    """WeChat Pay sends probes whose signature starts with WECHATPAY/SIGNTEST/: they must fail."""
    request = wechat_request(rsa_pair.private_pem)
    headers = {
        **request.headers,
        "wechatpay-signature": "WECHATPAY/SIGNTEST/" + request.headers["wechatpay-signature"],
    }
    probe = WebhookRequest(request.method, request.url, headers, request.body)
    assert reason(probe, {SERIAL: rsa_pair.public_pem}) == "malformed_header"


def test_signer_needs_a_serial(rsa_pair: Any) -> None:
    with pytest.raises(ValueError, match="serial"):
        build_signer("wechatpay", private_key=rsa_pair.private_pem)


# --- decrypt_wechatpay_resource ------------------------------------------------------------


def test_decrypts_the_go_sdk_vector() -> None:
    plaintext = decrypt_wechatpay_resource(
        GO_KEY, nonce=GO_NONCE, associated_data=GO_ASSOCIATED_DATA, ciphertext_b64=GO_CIPHERTEXT
    )
    assert plaintext == b"Hello World"


@pytest.mark.parametrize(
    ("key", "ciphertext"),
    [
        (GO_KEY, "invalid cipher"),  # "invalid base64 ciphertext"
        (GO_KEY, "SGVsbG8gV29ybGQK"),  # "invalid ciphertext"
        ("testAPIv3Key1111", GO_CIPHERTEXT),  # "wrong aes key"
    ],
)
def test_go_sdk_negative_cases(key: str, ciphertext: str) -> None:
    with pytest.raises(VerificationError) as info:
        decrypt_wechatpay_resource(
            key, nonce=GO_NONCE, associated_data=GO_ASSOCIATED_DATA, ciphertext_b64=ciphertext
        )
    assert info.value.reason == "decryption_failed"


def test_key_of_impossible_length_is_a_value_error() -> None:
    # The Go SDK's "invalid aes key" case.
    with pytest.raises(ValueError, match="APIv3 key"):
        decrypt_wechatpay_resource(
            "not a aes key",
            nonce=GO_NONCE,
            associated_data=GO_ASSOCIATED_DATA,
            ciphertext_b64=GO_CIPHERTEXT,
        )


def test_round_trip_with_a_32_byte_key_and_wrong_associated_data() -> None:
    key = "0123456789abcdef0123456789abcdef"
    nonce = "abcdefghijkl"
    sealed = AESGCM(key.encode()).encrypt(nonce.encode(), b'{"out_trade_no":"1"}', b"transaction")
    encoded = base64.b64encode(sealed).decode()
    opened = decrypt_wechatpay_resource(
        key, nonce=nonce, associated_data="transaction", ciphertext_b64=encoded
    )
    assert opened == b'{"out_trade_no":"1"}'
    with pytest.raises(VerificationError):
        decrypt_wechatpay_resource(
            key, nonce=nonce, associated_data="certificate", ciphertext_b64=encoded
        )
