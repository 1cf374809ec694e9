"""Password hashes for ``[[console.users]]``: scrypt (hashlib), self-describing.

The format is ``scrypt$N$r$p$SALT$HASH`` (salt and hash in unpadded URL-safe base64), so
the cost can be raised later without breaking stored hashes: each hash says how it was made.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

__all__ = ["hash_password", "verify_password"]

# 2**15 * 8 * 128 bytes = 32 MiB of memory per hash: OWASP's scrypt floor is N=2**17 at
# r=8, p=1 for new systems; 2**15 keeps a sign-in near 0.1 s on a small machine.
_N, _R, _P = 2**15, 8, 1
_MAXMEM = 64 * 1024 * 1024
_LENGTH = 32


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str, *, n: int = _N, r: int = _R, p: int = _P) -> str:
    """A new salted hash of ``password`` in the ``scrypt$N$r$p$salt$hash`` format."""
    if not password:
        raise ValueError("the password is empty")
    salt = os.urandom(16)
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=_LENGTH
    )
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored``; a malformed hash never matches."""
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(
            password.encode(),
            salt=_unb64(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=_MAXMEM,
            dklen=len(_unb64(expected)),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(digest, _unb64(expected))
