"""Keys for the verifier tests, generated once per session (RSA generation is the slow part)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from tests._keys import RsaPair, make_rsa_pair
from tests.verifiers._ec import EcPair, make_ec_pair


@dataclass(frozen=True)
class Ed25519Pair:
    whsk: str
    whpk: str
    # The same pair as Discord spells it: hex seed, hex public key.
    discord_private: str
    discord_public: str


@pytest.fixture(scope="session")
def rsa_pair() -> RsaPair:
    """The provider's current RSA key."""
    return make_rsa_pair("current")


@pytest.fixture(scope="session")
def other_rsa_pair() -> RsaPair:
    """A second RSA key: a rotated-out key, or an attacker's."""
    return make_rsa_pair("other")


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
        discord_private=seed.hex(),
        discord_public=public.hex(),
    )


@pytest.fixture(scope="session")
def ed25519_pair() -> Ed25519Pair:
    """A Standard Webhooks asymmetric key pair (whsk_ / whpk_)."""
    return _ed25519_pair()


@pytest.fixture(scope="session")
def other_ed25519_pair() -> Ed25519Pair:
    """A second Ed25519 key pair."""
    return _ed25519_pair()


@pytest.fixture(scope="session")
def ec_pair() -> EcPair:
    """SendGrid's Event Webhook key pair."""
    return make_ec_pair()


@pytest.fixture(scope="session")
def other_ec_pair() -> EcPair:
    """A second P-256 pair."""
    return make_ec_pair()
