"""Keys for the verifier tests, generated once per session (RSA generation is the slow part)."""

from __future__ import annotations

import base64
import datetime
from dataclasses import dataclass

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class RsaPair:
    private_pem: str
    public_pem: str
    certificate_pem: str


@dataclass(frozen=True)
class Ed25519Pair:
    whsk: str
    whpk: str


def _rsa_pair(common_name: str) -> RsaPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public_pem = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    certificate_pem = certificate.public_bytes(serialization.Encoding.PEM).decode()
    return RsaPair(private_pem, public_pem, certificate_pem)


@pytest.fixture(scope="session")
def rsa_pair() -> RsaPair:
    """The provider's current RSA key."""
    return _rsa_pair("current")


@pytest.fixture(scope="session")
def other_rsa_pair() -> RsaPair:
    """A second RSA key: a rotated-out key, or an attacker's."""
    return _rsa_pair("other")


def _ed25519_pair() -> Ed25519Pair:
    key = ed25519.Ed25519PrivateKey.generate()
    seed = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return Ed25519Pair(
        whsk="whsk_" + base64.b64encode(seed).decode(),
        whpk="whpk_" + base64.b64encode(public).decode(),
    )


@pytest.fixture(scope="session")
def ed25519_pair() -> Ed25519Pair:
    """A Standard Webhooks asymmetric key pair (whsk_ / whpk_)."""
    return _ed25519_pair()


@pytest.fixture(scope="session")
def other_ed25519_pair() -> Ed25519Pair:
    """A second Ed25519 key pair."""
    return _ed25519_pair()
