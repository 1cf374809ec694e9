"""PayPal's self-verification, offline: PayPal's Python SDKs verify by downloading the
certificate, so the scheme is proven by a second implementation written here from its docs
page (https://developer.paypal.com/api/rest/webhooks/rest/, "Self-verification method"),
signing what we accept and accepting what ``inbox send`` posts, under a certificate of our
own in place of the one PayPal's URL serves."""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from inbox._core.errors import VerificationError
from tests._keys import RsaPair
from tests.verifiers._proofs import proves
from tests.verifiers._sdk import received, sent

NOW = 1_700_000_000
WEBHOOK_ID = "1JE4291016473214C"
CERT_ID = "CERT-360caa42-fca2a594-a5cafa77"
CERT_URL = "https://api.paypal.com/v1/notifications/certs/" + CERT_ID
BODY = (
    b'{"id":"WH-58D329510W468432D-8HN650336L201105X","event_version":"1.0",'
    b'"create_time":"2023-11-14T22:13:20.000Z","resource_type":"capture",'
    b'"event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"id":"42311647XV020574X"}}'
)


def docs_message(transmission_id: str, time_stamp: str, webhook_id: str, body: bytes) -> bytes:
    # "transmissionId|timeStamp|webhookId|crc32": the CRC32 of the raw event body, as a
    # decimal; the message is then checked with the certificate's public key, SHA256withRSA.
    crc = binascii.crc32(body) & 0xFFFFFFFF
    return f"{transmission_id}|{time_stamp}|{webhook_id}|{crc}".encode()


def docs_headers(
    pair: RsaPair, body: bytes, *, time_stamp: str = "2023-11-14T22:13:20Z"
) -> dict[str, str]:
    key = serialization.load_pem_private_key(pair.private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    transmission_id = "69cd13f0-d67a-11e5-baa3-778b53f4ae55"
    message = docs_message(transmission_id, time_stamp, WEBHOOK_ID, body)
    signature = key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    return {
        "PAYPAL-TRANSMISSION-ID": transmission_id,
        "PAYPAL-TRANSMISSION-TIME": time_stamp,
        "PAYPAL-TRANSMISSION-SIG": base64.b64encode(signature).decode(),
        "PAYPAL-CERT-URL": CERT_URL,
        "PAYPAL-AUTH-ALGO": "SHA256withRSA",
    }


def table(pair: RsaPair, other: RsaPair) -> dict[str, Any]:
    return {
        "public_keys": {"CERT-retired": other.certificate_pem, CERT_ID: pair.certificate_pem},
        "options": {"webhook_id": WEBHOOK_ID},
    }


@proves("paypal", "docs-twin")
def test_an_event_signed_from_the_docs_verifies(rsa_pair: RsaPair, other_rsa_pair: RsaPair) -> None:
    headers = docs_headers(rsa_pair, BODY)
    found = received("paypal", headers, BODY, now=NOW, **table(rsa_pair, other_rsa_pair))
    assert found == ("WH-58D329510W468432D-8HN650336L201105X", "PAYMENT.CAPTURE.COMPLETED")
    with pytest.raises(VerificationError, match="bad_signature"):
        received("paypal", headers, BODY + b" ", now=NOW, **table(rsa_pair, other_rsa_pair))
    other_webhook = {**table(rsa_pair, other_rsa_pair), "options": {"webhook_id": "OTHER"}}
    with pytest.raises(VerificationError, match="bad_signature"):
        received("paypal", headers, BODY, now=NOW, **other_webhook)
    with pytest.raises(VerificationError, match="timestamp_too_old"):
        received("paypal", headers, BODY, now=NOW + 301, **table(rsa_pair, other_rsa_pair))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://evil.example.com/v1/notifications/certs/" + CERT_ID, "untrusted_cert_url"),
        ("http://api.paypal.com/v1/notifications/certs/" + CERT_ID, "untrusted_cert_url"),
        (
            "https://api.paypal.com.evil.example/v1/notifications/certs/" + CERT_ID,
            "untrusted_cert_url",
        ),
        ("https://api.paypal.com/v1/other/" + CERT_ID, "untrusted_cert_url"),
        ("https://api.paypal.com/v1/notifications/certs/CERT-unknown", "unknown_key_id"),
    ],
)
def test_a_certificate_url_off_paypal_or_unknown_is_refused(
    rsa_pair: RsaPair, other_rsa_pair: RsaPair, url: str, reason: str
) -> None:
    headers = {**docs_headers(rsa_pair, BODY), "PAYPAL-CERT-URL": url}
    with pytest.raises(VerificationError, match=reason):
        received("paypal", headers, BODY, now=NOW, **table(rsa_pair, other_rsa_pair))


@proves("paypal", "docs-twin")
def test_what_inbox_send_posts_verifies_by_the_docs(
    rsa_pair: RsaPair, other_rsa_pair: RsaPair
) -> None:
    sample = sent(
        "paypal",
        now=time.time(),
        private_key=rsa_pair.private_pem,
        **{
            **table(rsa_pair, other_rsa_pair),
            "options": {"webhook_id": WEBHOOK_ID, "cert_id": CERT_ID},
        },
    )
    h = sample.headers
    assert h["paypal-cert-url"].endswith("/v1/notifications/certs/" + CERT_ID)
    assert h["paypal-auth-algo"] == "SHA256withRSA"
    message = docs_message(
        h["paypal-transmission-id"], h["paypal-transmission-time"], WEBHOOK_ID, sample.body
    )
    certificate = x509.load_pem_x509_certificate(rsa_pair.certificate_pem.encode())
    public_key = certificate.public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)
    signature = base64.b64decode(h["paypal-transmission-sig"])
    public_key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    with pytest.raises(InvalidSignature):
        public_key.verify(signature, message + b"0", padding.PKCS1v15(), hashes.SHA256())
