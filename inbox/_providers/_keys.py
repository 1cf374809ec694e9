"""Loading keys from configuration text, and the RSA operation Alipay and WeChat Pay share.

The elliptic-curve private key (P-256) signs SendGrid's and Plaid's deliveries for
``inbox send``.

Configuration errors surface as ``ValueError`` at build time (start-up), never as a
verification failure on the first webhook.
"""

from __future__ import annotations

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

__all__ = [
    "load_ec_private_key",
    "load_rsa_private_key",
    "load_rsa_public_key",
    "rsa_sha256_sign",
    "rsa_sha256_verify",
]


def load_rsa_public_key(pem: str) -> rsa.RSAPublicKey:
    """Load an RSA public key from a PEM public key or a PEM certificate.

    Providers hand out either: Alipay and WeChat Pay ship "public key mode" and "certificate
    mode", and the operator should be able to paste whichever they downloaded.
    """
    data = pem.strip().encode("ascii")
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            key: object = x509.load_pem_x509_certificate(data).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise ValueError(f"cannot load the public key: {exc}") from exc
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("the public key is not an RSA key")
    return key


def load_rsa_private_key(pem: str) -> rsa.RSAPrivateKey:
    """Load an unencrypted PEM RSA private key (PKCS#1 or PKCS#8)."""
    try:
        key = serialization.load_pem_private_key(pem.strip().encode("ascii"), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"cannot load the private key: {exc}") from exc
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("the private key is not an RSA key")
    return key


def load_ec_private_key(pem: str) -> ec.EllipticCurvePrivateKey:
    """Load an unencrypted PEM elliptic-curve private key (SEC1 or PKCS#8)."""
    try:
        key = serialization.load_pem_private_key(pem.strip().encode("ascii"), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"cannot load the private key: {exc}") from exc
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the private key is not an elliptic-curve key")
    return key


def rsa_sha256_verify(key: rsa.RSAPublicKey, signature: bytes, message: bytes) -> bool:
    """SHA256withRSA, PKCS#1 v1.5 — what both Alipay's RSA2 and WeChat Pay v3 use."""
    try:
        key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def rsa_sha256_sign(key: rsa.RSAPrivateKey, message: bytes) -> bytes:
    """The signing twin of ``rsa_sha256_verify``."""
    return key.sign(message, padding.PKCS1v15(), hashes.SHA256())
