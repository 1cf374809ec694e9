"""A P-256 key pair, as SendGrid's Event Webhook uses (generating one is fast)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["EcPair", "make_ec_pair"]


@dataclass(frozen=True)
class EcPair:
    """A P-256 pair: the public key as SendGrid shows it (base64 DER), the private one PEM."""

    public_b64: str
    private_pem: str
    public_pem: str
    jwk: str  # as Plaid's /webhook_verification_key/get returns it


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
    public = key.public_key()
    numbers = public.public_numbers()
    jwk = {
        "alg": "ES256",
        "crv": "P-256",
        "kid": "test-kid",
        "kty": "EC",
        "use": "sig",
        "x": base64.urlsafe_b64encode(numbers.x.to_bytes(32, "big")).decode().rstrip("="),
        "y": base64.urlsafe_b64encode(numbers.y.to_bytes(32, "big")).decode().rstrip("="),
    }
    public_pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return EcPair(
        public_b64=base64.b64encode(der).decode(),
        private_pem=pem.decode(),
        public_pem=public_pem.decode(),
        jwk=json.dumps(jwk),
    )
