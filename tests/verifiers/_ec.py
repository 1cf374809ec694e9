"""A P-256 key pair, as SendGrid's Event Webhook uses (generating one is fast)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["EcPair", "make_ec_pair"]


@dataclass(frozen=True)
class EcPair:
    """A P-256 pair: the public key as SendGrid shows it (base64 DER), the private one PEM."""

    public_b64: str
    private_pem: str


def make_ec_pair() -> EcPair:
    key = ec.generate_private_key(ec.SECP256R1())
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return EcPair(public_b64=base64.b64encode(der).decode(), private_pem=pem.decode())
