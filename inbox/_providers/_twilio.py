"""Twilio: ``X-Twilio-Signature``, base64 HMAC-SHA1 over the URL Twilio called plus the params.

For a form body the string signed is the full URL followed by every POST parameter sorted by
name, name and value concatenated. For a JSON body Twilio instead adds ``bodySHA256=<hex>``
to the URL's query, and signs the URL alone; that hash must then match the body.

The URL is the one *Twilio* called, which a receiver behind proxies does not see: the
``public_url`` option replaces scheme, host and path (the request's query string is kept,
since it is part of what was signed). Twilio's SDKs also accept the URL with or without the
port, because some of Twilio's own components add the default port and some drop it.

When a Webhooks Rule applies a Webhook Setting, Twilio signs the same string with the
Setting's SharedKey secret and algorithm and says so in
``X-Twilio-Webhooks-Signature-Settings: key=<shared key id>,algorithm=HMAC_SHA256``. The
header names the hash; without it (or without an ``algorithm``) the hash is HMAC-SHA1, as in
Twilio's SDKs. A source's ``secrets`` hold its Auth Token(s) and SharedKey secret(s) alike.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

from inbox._core.errors import VerificationError

from ._base import (
    FORM_CONTENT_TYPE,
    WebhookRequest,
    b64decode_lenient,
    digests_equal,
    parse_form,
    require_header,
    require_match,
)
from ._provider import (
    About,
    Provider,
    ProviderConfig,
    Sample,
    dev_token,
    public_url_option,
    specs,
)

__all__ = ["TwilioSigner", "TwilioVerifier", "twilio_url_with_body_hash"]

_BODY_HASH_PARAM = "bodySHA256"
_DEFAULT_PORTS = {"https": 443, "http": 80}
_SETTINGS_HEADER = "x-twilio-webhooks-signature-settings"
_SHA1 = "HMAC_SHA1"
_SHA256 = "HMAC_SHA256"
_HASHES = {_SHA1: "sha1", _SHA256: "sha256"}  # Twilio's algorithm names -> hashlib's


def _signed_content(url: str, params: Iterable[tuple[str, str]]) -> bytes:
    values: dict[str, set[str]] = {}
    for name, value in params:
        values.setdefault(name, set()).add(value)
    pieces = [url]
    for name in sorted(values):
        pieces.extend(name + value for value in sorted(values[name]))
    return "".join(pieces).encode()


def _digest(secret: str, content: bytes, algorithm: str = _SHA1) -> bytes:
    return hmac.new(secret.encode(), content, _HASHES[algorithm]).digest()


def _algorithm(settings: str) -> str:
    """The ``algorithm=`` of a signature-settings header, upper-cased; HMAC-SHA1 when absent."""
    for part in settings.split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip().lower() == "algorithm" and value.strip():
            return value.strip().upper()
    return _SHA1


def _url_variants(url: str) -> list[str]:
    """The URL without its port, and with its port (the default one added when absent)."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    try:
        port = parts.port
    except ValueError:
        return [url]
    host = hostport.removesuffix(f":{port}") if port is not None else hostport
    effective = port if port is not None else _DEFAULT_PORTS.get(parts.scheme.lower())
    with_port = f"{host}:{effective}" if effective is not None else host
    variants: list[str] = []
    for netloc in (userinfo + at + host, userinfo + at + with_port):
        candidate = urlunsplit(parts._replace(netloc=netloc))
        if candidate not in variants:
            variants.append(candidate)
    return variants


def _public_url(request_url: str, public_url: str | None) -> str:
    """The URL Twilio called: ``public_url``'s scheme/host/path with the request's query."""
    received = urlsplit(request_url)
    if public_url is None:
        return urlunsplit(received._replace(fragment=""))
    public = urlsplit(public_url)
    return urlunsplit(SplitResult(public.scheme, public.netloc, public.path, received.query, ""))


def twilio_url_with_body_hash(url: str, body: bytes) -> str:
    """Append ``bodySHA256`` to ``url``, as Twilio does when it sends a JSON body."""
    parts = urlsplit(url)
    pair = f"{_BODY_HASH_PARAM}={hashlib.sha256(body).hexdigest()}"
    query = f"{parts.query}&{pair}" if parts.query else pair
    return urlunsplit(parts._replace(query=query))


def _body_hash_param(url: str) -> str | None:
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if name == _BODY_HASH_PARAM:
            return value
    return None


@dataclass(frozen=True, slots=True)
class TwilioVerifier:
    """Any secret matching passes: an Auth Token (primary or secondary) or a SharedKey secret."""

    secrets: Sequence[str]
    public_url: str | None = None
    name: str = field(default="twilio")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check the body hash (JSON bodies), then the signature over each URL variant."""
        try:
            received = b64decode_lenient(require_header(request, "x-twilio-signature"))
        except ValueError:
            raise VerificationError("malformed_header") from None
        algorithm = _algorithm(request.headers.get(_SETTINGS_HEADER, ""))
        if algorithm not in _HASHES:
            raise VerificationError("no_supported_signature")
        url = _public_url(request.url, self.public_url)
        body_hash = _body_hash_param(url)
        params: list[tuple[str, str]]
        if body_hash is not None:
            expected_hash = hashlib.sha256(request.body).hexdigest().encode()
            if not digests_equal(expected_hash, body_hash.lower().encode("ascii", "replace")):
                raise VerificationError("bad_signature")
            params = []  # the body is covered by its hash in the URL
        else:
            params = request.form_params
        contents = [_signed_content(variant, params) for variant in _url_variants(url)]
        require_match(
            (_digest(s, content, algorithm) for content in contents for s in self.secrets),
            received,
        )


@dataclass(frozen=True, slots=True)
class TwilioSigner:
    """Signs a form body, or a JSON body whose URL already carries ``bodySHA256``.

    A signer only adds headers, so for JSON it cannot add the hash to the URL itself:
    build the URL with ``twilio_url_with_body_hash`` first. With ``shared_key_id`` it signs
    as a Webhook Setting does: HMAC-SHA256, and the signature-settings header naming the key.
    """

    secret: str
    shared_key_id: str | None = None

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature, Twilio's idempotency token and, for forms, the content type."""
        headers = {"i-twilio-idempotency-token": msg_id}
        if _body_hash_param(url) is not None:
            params: list[tuple[str, str]] = []
        else:
            params = parse_form(body)
            headers["content-type"] = FORM_CONTENT_TYPE
        algorithm = _SHA1
        if self.shared_key_id is not None:
            algorithm = _SHA256
            headers[_SETTINGS_HEADER] = f"key={self.shared_key_id},algorithm={algorithm}"
        digest = _digest(self.secret, _signed_content(url, params), algorithm)
        headers["x-twilio-signature"] = base64.b64encode(digest).decode()
        return headers


def _verifier(c: ProviderConfig) -> TwilioVerifier:
    c.allow_options("public_url", "shared_key_id")  # the id only signs: the header names it
    return TwilioVerifier(c.require_secrets(), c.string_option("public_url"))


def _signer(c: ProviderConfig) -> TwilioSigner:
    c.allow_options("public_url", "shared_key_id")  # one options table serves both directions
    return TwilioSigner(c.require_secrets()[0], c.string_option("shared_key_id"))


def _sample(_s: Sample) -> dict[str, Any]:
    return {
        "MessageSid": "SM" + uuid.uuid4().hex,
        "AccountSid": "AC" + "0" * 32,
        "From": "+15005550006",
        "To": "+15005550001",
        "Body": "hello from inbox send",
    }


PROVIDER = Provider(
    name="twilio",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Twilio",
        family="messaging",
        signs="HMAC-SHA1 (or SHA-256) base64 of the URL and sorted form fields (JSON: bodySHA256)",
        unsigned="I-Twilio-Idempotency-Token (the key); no timestamp",
        proof="sdk-both-ways",
        proof_source="twilio (RequestValidator)",
    ),
    key_specs=specs("header:i-twilio-idempotency-token"),
    sample=_sample,
    posts_form=True,
    verifier_options=public_url_option,
    dev_secret=dev_token(),
)
