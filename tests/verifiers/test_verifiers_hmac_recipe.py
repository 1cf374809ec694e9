"""The generic ``hmac`` recipe: options, templates and encodings."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier
from tests.verifiers._proofs import proves

NOW = 1_700_000_000


def req(headers: dict[str, str], body: bytes) -> WebhookRequest:
    return WebhookRequest("POST", "https://example.com/webhooks/h", headers, body)


@proves("hmac", "vectors")
def test_github_vector_as_a_recipe() -> None:
    """GitHub's documented example (docs.github.com), expressed as an hmac recipe."""
    options = {"header": "X-Hub-Signature-256", "prefix": "sha256="}
    header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    verifier = build_verifier("hmac", secrets=["It's a Secret to Everybody"], options=options)
    verifier.verify(req({"x-hub-signature-256": header}, b"Hello, World!"), now=NOW)


def test_braces_in_the_body_are_not_placeholders() -> None:
    """The body is bytes spliced in, never passed through str.format."""
    options = {
        "header": "X-Sig",
        "signed_content": "{timestamp}:{body}",
        "timestamp_header": "X-Ts",
    }
    body = b'{"text": "{id} {timestamp} {body} {0} {"}'
    expected = hmac.new(b"k", f"{NOW}:".encode() + body, hashlib.sha256).hexdigest()
    verifier = build_verifier("hmac", secrets=["k"], options=options)
    verifier.verify(req({"x-sig": expected, "x-ts": str(NOW)}, body), now=NOW)


def test_literal_braces_in_the_template_are_kept() -> None:
    options = {"header": "X-Sig", "signed_content": "v1:{x}:{body}"}
    expected = hmac.new(b"k", b"v1:{x}:" + b"payload", hashlib.sha256).hexdigest()
    build_verifier("hmac", secrets=["k"], options=options).verify(
        req({"x-sig": expected}, b"payload"), now=NOW
    )


def test_non_utf8_body_is_fine() -> None:
    body = bytes(range(256))
    expected = hmac.new(b"k", body, hashlib.sha256).hexdigest()
    build_verifier("hmac", secrets=["k"], options={"header": "X-Sig"}).verify(
        req({"x-sig": expected}, body), now=NOW
    )


@pytest.mark.parametrize("algorithm", ["sha1", "sha256", "sha512"])
@pytest.mark.parametrize("encoding", ["hex", "base64"])
def test_algorithms_and_encodings_round_trip(algorithm: str, encoding: str) -> None:
    options = {"header": "X-Sig", "algorithm": algorithm, "encoding": encoding}
    headers = build_signer("hmac", secrets=["k"], options=options).sign(
        body=b"{}", url="", now=NOW, msg_id="m"
    )
    digest = hmac.new(b"k", b"{}", getattr(hashlib, algorithm)).digest()
    assert headers["x-sig"] == (
        digest.hex() if encoding == "hex" else base64.b64encode(digest).decode()
    )
    build_verifier("hmac", secrets=["k"], options=options).verify(req(headers, b"{}"), now=NOW)


def test_missing_prefix_is_malformed() -> None:
    options = {"header": "X-Sig", "prefix": "sha256="}
    digest = hmac.new(b"k", b"{}", hashlib.sha256).hexdigest()
    with pytest.raises(VerificationError) as info:
        build_verifier("hmac", secrets=["k"], options=options).verify(
            req({"x-sig": digest}, b"{}"), now=NOW
        )
    assert info.value.reason == "malformed_header"


def test_non_hex_signature_is_malformed() -> None:
    with pytest.raises(VerificationError) as info:
        build_verifier("hmac", secrets=["k"], options={"header": "X-Sig"}).verify(
            req({"x-sig": "zz"}, b"{}"), now=NOW
        )
    assert info.value.reason == "malformed_header"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "options.header"),
        ({"header": "X"}, None),
        ({"header": "X", "algorithm": "md5"}, "algorithm"),
        ({"header": "X", "encoding": "base32"}, "encoding"),
        ({"header": "X", "signed_content": "{timestamp}"}, "must include"),
        ({"header": "X", "signed_content": "{timestamp}.{body}"}, "timestamp_header"),
        ({"header": "X", "signed_content": "{id}.{body}"}, "id_header"),
        ({"header": "X", "hedaer": "Y"}, "unknown options"),
        ({"header": 5}, "string"),
    ],
)
def test_option_validation(options: dict[str, object], message: str | None) -> None:
    if message is None:
        build_verifier("hmac", secrets=["k"], options=options)
        return
    with pytest.raises(ValueError, match=message):
        build_verifier("hmac", secrets=["k"], options=options)
