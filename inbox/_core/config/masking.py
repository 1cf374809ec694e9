"""Passwords of connection strings masked in any text: I/O-free, and light to import (the
writer's error boundary uses it, and a writer loads no settings machinery)."""

from __future__ import annotations

import re

__all__ = ["mask_password"]

# A URL's password runs to the last "@" of its line: a password may hold spaces, quotes or
# an "@" of its own (libpq refuses them, but its error quotes the text), and masking too
# much is harmless where too little shows a secret.
_PASSWORD_IN_URL = re.compile(r"(://[^:/@\s'\"]*:).*@")
# key=value (also `sslpassword=`, and a URL's `?password=`): a quoted value with libpq's
# backslash escapes, unterminated to the end; unquoted, the words up to the next `key=`.
_PASSWORD_PAIR = re.compile(
    r"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S+(?:\s+(?![\w.-]+\s*=)\S+)*)", re.IGNORECASE
)
# The fragments of its input a libpq parse error quotes.
_QUOTED = re.compile(r'"([^"]*)"')


def mask_password(text: str, conninfo: str | None = None) -> str:
    """``text`` with any password of a connection string in it replaced by ``***``.

    With ``conninfo``, the connection string ``text`` is an error about (a libpq parse
    error), also every quoted fragment of ``text`` that is part of its password, or holds it.
    """
    masked = _PASSWORD_PAIR.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1***@", text))
    if conninfo is None:
        return masked
    secrets = _password_texts(conninfo)
    if not secrets:
        return masked

    def fragment(match: re.Match[str]) -> str:
        part = match.group(1).strip()
        # libpq may have cut the password at an "@" or "/" of its own: a piece of it counts.
        pieces = [part, *(p for p in re.split(r"[\s@/:]+", part) if len(p) >= 3)]
        hides = part and any(p in secret or secret in p for p in pieces for secret in secrets)
        return '"***"' if hides else match.group(0)

    for secret in sorted(secrets, key=len, reverse=True):
        masked = masked.replace(secret, "***")
    return _QUOTED.sub(fragment, masked)


def _password_texts(conninfo: str) -> list[str]:
    """What may be a password in ``conninfo``, read leniently (it may not parse)."""
    found = []
    url = re.search(r"://[^:/@\s'\"]*:(.*)@", conninfo)
    if url is not None and url.group(1):
        found.append(url.group(1))
    for pair in _PASSWORD_PAIR.finditer(conninfo):
        value = pair.group(2)
        found.append(value)
        if value.startswith("'"):
            found.append(value.strip("'"))
    return [text for text in found if text]
