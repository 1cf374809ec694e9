"""The request model, the two ports (Verifier, Signer) and the checks every scheme shares.

Everything here is pure: no I/O, no clock (``now`` is always passed in), so the verifiers
can be tested with fixed published vectors and reused by both the ASGI receiver and
``inbox send``.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlsplit

from inbox._core.errors import VerificationError

__all__ = [
    "FORM_CONTENT_TYPE",
    "BodySigner",
    "Signer",
    "Verifier",
    "WebhookRequest",
    "b64decode_lenient",
    "check_timestamp",
    "digests_equal",
    "matches_any",
    "parse_form",
    "require_header",
    "require_match",
]

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"

# Unix seconds as ASCII digits only: int() would also accept "+1", " 1" or non-ASCII digits,
# and a signature header is no place to be lenient about what a number looks like.
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}")


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """One HTTP request exactly as received; the verifiers never see anything re-encoded.

    ``headers`` keys are lower-cased by the caller. ``body`` is the raw bytes: a signature
    covers bytes, and re-serialising parsed JSON (other whitespace, other key order) breaks it.
    """

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes

    @property
    def query_params(self) -> list[tuple[str, str]]:
        """The URL's query parameters, decoded, in order, repeated names kept."""
        return parse_qsl(urlsplit(self.url).query, keep_blank_values=True)

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-cased ("" when absent)."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def form_params(self) -> list[tuple[str, str]]:
        """The body's form parameters when it is form-encoded, else an empty list.

        Percent-escapes are decoded as UTF-8 unless the Content-Type names another charset.
        """
        if self.content_type != FORM_CONTENT_TYPE:
            return []
        return parse_form(self.body, charset=self._charset() or "utf-8")

    def _charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.partition("=")
            if name.strip().lower() == "charset" and value.strip():
                return value.strip().strip('"')
        return None


def parse_form(body: bytes, *, charset: str = "utf-8") -> list[tuple[str, str]]:
    """Parse a form-encoded body; a body that does not decode yields no parameters."""
    try:
        # A form body is ASCII on the wire; the charset only applies to percent-escapes.
        text = body.decode("ascii")
        return parse_qsl(text, keep_blank_values=True, encoding=charset, errors="strict")
    except (UnicodeDecodeError, LookupError):
        return []


class Verifier(Protocol):
    """Checks that a request was sent by the holder of a configured secret or key."""

    # Read-only in the protocol so that frozen dataclasses (immutable once built) conform.
    @property
    def name(self) -> str:
        """The scheme's configuration name: "standard-webhooks", "stripe", ..."""
        ...

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Return when the request verifies; raise ``VerificationError`` otherwise."""
        ...


class Signer(Protocol):
    """Produces the headers that make a request verify (``inbox send`` and the tests)."""

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the headers to add to a request carrying ``body`` to ``url``."""
        ...


@runtime_checkable
class BodySigner(Protocol):
    """A signer whose scheme puts the signature *in the body* (Alipay's ``sign`` parameter).

    Headers alone cannot carry such a signature, so these signers also rewrite the body;
    use ``sign_request`` to treat every signer alike.
    """

    def sign_body(self, *, body: bytes, url: str, now: float, msg_id: str) -> bytes:
        """Return the body to send in place of ``body``."""
        ...


def require_header(request: WebhookRequest, name: str, *aliases: str) -> str:
    """The header's value; a missing or empty header is ``missing_header``.

    ``aliases`` are other names a provider sends the same header under (Svix's ``svix-id``
    for ``webhook-id``), tried in order when ``name`` is absent.
    """
    for candidate in (name, *aliases):
        value = request.headers.get(candidate, "").strip()
        if value:
            return value
    raise VerificationError("missing_header")


def check_timestamp(raw: str, *, now: float, tolerance_seconds: int) -> int:
    """Parse a Unix-seconds timestamp and reject it outside ``now ± tolerance``.

    Both directions matter: an old timestamp is a replay, and one far in the future is a
    signature made to be replayed later (or a sender whose clock is broken).
    """
    raw = raw.strip()
    if not _UNIX_SECONDS.fullmatch(raw):
        raise VerificationError("malformed_header")
    timestamp = int(raw)
    if now - timestamp > tolerance_seconds:
        raise VerificationError("timestamp_too_old")
    if timestamp - now > tolerance_seconds:
        raise VerificationError("timestamp_in_future")
    return timestamp


def b64decode_lenient(value: str) -> bytes:
    """Decode standard base64, padded or not, as the Standard Webhooks libraries accept.

    Raises ``ValueError`` on anything that is not base64 (never silently drops characters).
    """
    value = value.strip()
    value += "=" * (-len(value) % 4)
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError("not valid base64") from exc


def digests_equal(expected: bytes, received: bytes) -> bool:
    """Constant-time comparison, so response timing never leaks how much of a guess matched."""
    return hmac.compare_digest(expected, received)


def matches_any(expected: Iterable[bytes], *received: bytes) -> bool:
    """Whether any expected digest equals any received one. Every pair is compared, with no
    early exit: the time taken does not tell which secret (or which signature) matched."""
    matched = False
    for digest in expected:
        for candidate in received:
            matched |= digests_equal(digest, candidate)
    return matched


def require_match(expected: Iterable[bytes], *received: bytes) -> None:
    """Return when ``matches_any``; raise ``bad_signature`` otherwise (one expected digest per
    configured secret: rotation)."""
    if not matches_any(expected, *received):
        raise VerificationError("bad_signature")
