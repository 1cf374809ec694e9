"""Standard Webhooks, against the vectors of the reference Python library.

Source: standard-webhooks/standard-webhooks, libraries/python/tests/test_webhooks.py
(secret, message id, payload, timestamp 1614265330 and the expected ``v1`` signature of
``test_sign_function``; the multi-signature header of ``test_multi_sig_payload_is_valid``).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier
from tests.verifiers._proofs import proves

# standard-webhooks/standard-webhooks libraries/python/tests/test_webhooks.py
SECRET = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
PAYLOAD = b'{"test": 2432232314}'
TIMESTAMP = 1614265330
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
WRONG = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="


def request(signature: str = SIGNATURE, body: bytes = PAYLOAD, **extra: str) -> WebhookRequest:
    headers = {
        "webhook-id": MSG_ID,
        "webhook-timestamp": str(TIMESTAMP),
        "webhook-signature": signature,
        **extra,
    }
    return WebhookRequest("POST", "https://example.com/webhooks/sw", headers, body)


def verify(req: WebhookRequest, *, secrets: tuple[str, ...] = ("whsec_" + SECRET,)) -> None:
    build_verifier("standard-webhooks", secrets=secrets).verify(req, now=TIMESTAMP + 1)


def reason(req: WebhookRequest, **kwargs: Any) -> str:
    with pytest.raises(VerificationError) as info:
        verify(req, **kwargs)
    return info.value.reason


@proves("standard-webhooks", "vectors")
def test_sign_matches_the_reference_vector() -> None:
    signer = build_signer("standard-webhooks", secrets=["whsec_" + SECRET])
    headers = signer.sign(body=PAYLOAD, url="", now=TIMESTAMP, msg_id=MSG_ID)
    assert headers == {
        "webhook-id": MSG_ID,
        "webhook-timestamp": str(TIMESTAMP),
        "webhook-signature": SIGNATURE,
    }


@pytest.mark.parametrize(
    "secret",
    [
        "whsec_" + SECRET,
        SECRET,  # without the prefix, as the reference libraries accept
    ],
)
def test_reference_vector_verifies(secret: str) -> None:
    verify(request(), secrets=(secret,))


def test_unpadded_secret_is_accepted() -> None:
    raw = b"sixteen byte key"  # 16 bytes: base64 needs padding
    padded = base64.b64encode(raw).decode()
    assert padded.endswith("=")
    signer = build_signer("standard-webhooks", secrets=["whsec_" + padded])
    headers = signer.sign(body=PAYLOAD, url="", now=TIMESTAMP, msg_id=MSG_ID)
    verify(request(headers["webhook-signature"]), secrets=("whsec_" + padded.rstrip("="),))


def test_multi_signature_header_with_one_valid_entry() -> None:
    # test_multi_sig_payload_is_valid: wrong v1, unknown v2, the valid one, wrong v1 again.
    header = " ".join([WRONG, WRONG.replace("v1,", "v2,"), SIGNATURE, WRONG])
    verify(request(header))


def test_wrong_signature_is_bad_signature() -> None:
    # test_invalid_signature_raises_error: the valid signature with its last character changed.
    assert reason(request("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=")) == "bad_signature"


def test_only_unknown_versions_is_no_supported_signature() -> None:
    assert reason(request(SIGNATURE.replace("v1,", "v2,"))) == "no_supported_signature"
    assert reason(request("v9,abc v3,def")) == "no_supported_signature"


def test_garbage_entries_are_skipped() -> None:
    verify(request("garbage v1,!!! " + SIGNATURE))
    assert reason(request("garbage")) == "no_supported_signature"


def test_non_numeric_timestamp_is_malformed() -> None:
    # test_invalid_timestamp_raises_error
    req = request(**{"webhook-timestamp": "hello"})
    assert reason(req) == "malformed_header"


def test_wrong_message_id_fails() -> None:
    assert reason(request(**{"webhook-id": "msg_other"})) == "bad_signature"


def test_v1_only_when_configured_with_public_keys_is_unsupported(ed25519_pair: Any) -> None:
    verifier = build_verifier("standard-webhooks", public_keys=[ed25519_pair.whpk])
    with pytest.raises(VerificationError) as info:
        verifier.verify(request(), now=TIMESTAMP)
    assert info.value.reason == "no_supported_signature"


def test_mixed_symmetric_and_asymmetric(ed25519_pair: Any) -> None:
    signer = build_signer(
        "standard-webhooks", secrets=["whsec_" + SECRET], private_key=ed25519_pair.whsk
    )
    headers = signer.sign(body=PAYLOAD, url="", now=TIMESTAMP, msg_id=MSG_ID)
    entries = headers["webhook-signature"].split()
    assert [e.split(",")[0] for e in entries] == ["v1", "v1a"]
    only_keys = build_verifier("standard-webhooks", public_keys=[ed25519_pair.whpk])
    only_keys.verify(request(headers["webhook-signature"]), now=TIMESTAMP)
    verify(request(headers["webhook-signature"]))


def test_ed25519_against_the_cryptography_library_directly() -> None:
    """A v1a signature made with plain ``cryptography`` (not our signer) verifies."""
    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    content = f"{MSG_ID}.{TIMESTAMP}.".encode() + PAYLOAD
    header = "v1a," + base64.b64encode(key.sign(content)).decode()
    verifier = build_verifier(
        "standard-webhooks", public_keys=["whpk_" + base64.b64encode(public).decode()]
    )
    verifier.verify(request(header), now=TIMESTAMP)


def test_whsk_in_64_byte_form_is_accepted(ed25519_pair: Any) -> None:
    seed = base64.b64decode(ed25519_pair.whsk.removeprefix("whsk_"))
    public = base64.b64decode(ed25519_pair.whpk.removeprefix("whpk_"))
    long_form = "whsk_" + base64.b64encode(seed + public).decode()
    signer = build_signer("standard-webhooks", private_key=long_form)
    headers = signer.sign(body=PAYLOAD, url="", now=TIMESTAMP, msg_id=MSG_ID)
    verifier = build_verifier("standard-webhooks", public_keys=[ed25519_pair.whpk])
    verifier.verify(request(headers["webhook-signature"]), now=TIMESTAMP)


@pytest.mark.parametrize("bad", ["whsec_not base64!", "whsec_"])
def test_bad_secret_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError, match="standard-webhooks secret"):
        build_verifier("standard-webhooks", secrets=[bad])


def test_bad_public_key_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="public key"):
        build_verifier(
            "standard-webhooks", public_keys=["whpk_" + base64.b64encode(b"short").decode()]
        )
