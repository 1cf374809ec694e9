"""A generic HMAC scheme assembled from options, for providers without a dedicated verifier.

Options: ``header`` (required), ``algorithm`` (sha1/sha256/sha512), ``encoding`` (hex/base64),
``prefix`` (e.g. ``"sha256="``), ``signed_content`` (a template over ``{body}``,
``{timestamp}`` and ``{id}``), ``timestamp_header`` and ``id_header``.

The template is split into literal pieces and placeholders once, at build time, and the
signed bytes are assembled by concatenation: the body is raw bytes and must never pass
through ``str.format`` (a ``{`` in a JSON body would be read as a placeholder).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from inbox._core.config.specs import Spec
from inbox._core.errors import VerificationError

from ._base import WebhookRequest, check_timestamp, require_header, require_match
from ._provider import About, Provider, ProviderConfig

__all__ = [
    "HmacRecipe",
    "HmacRecipeSigner",
    "HmacRecipeVerifier",
    "parse_recipe",
    "recipe_signer",
    "recipe_verifier",
]

_ALGORITHMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "sha512": hashlib.sha512}
_ENCODINGS = ("hex", "base64")
_PLACEHOLDER = re.compile(r"\{(body|timestamp|id)\}")
_KNOWN_OPTIONS = frozenset(
    {"header", "algorithm", "encoding", "prefix", "signed_content", "timestamp_header", "id_header"}
)


@dataclass(frozen=True, slots=True)
class HmacRecipe:
    """The validated options; ``template`` alternates literal text and placeholder names."""

    header: str
    algorithm: str
    encoding: str
    prefix: str
    template: tuple[tuple[bool, str], ...]  # (is_placeholder, text-or-name)
    timestamp_header: str | None
    id_header: str | None

    def content(self, *, body: bytes, timestamp: str, msg_id: str) -> bytes:
        """The signed bytes: literal pieces and values concatenated, the body untouched."""
        values = {"body": body, "timestamp": timestamp.encode(), "id": msg_id.encode()}
        return b"".join(values[text] if is_ph else text.encode() for is_ph, text in self.template)

    def digest(self, secret: str, content: bytes) -> bytes:
        """The raw HMAC under ``secret`` (UTF-8)."""
        return hmac.new(secret.encode(), content, _ALGORITHMS[self.algorithm]).digest()

    def encode(self, digest: bytes) -> str:
        """The header value for ``digest``: prefix plus hex or base64."""
        text = digest.hex() if self.encoding == "hex" else base64.b64encode(digest).decode()
        return self.prefix + text


def _option(options: Mapping[str, object], name: str, default: str | None) -> str | None:
    value = options.get(name, default)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"hmac verifier option {name!r} must be a string")
    return value


def parse_recipe(options: Mapping[str, object]) -> HmacRecipe:
    """Validate the options once, at start-up, with messages that name the option."""
    unknown = sorted(set(options) - _KNOWN_OPTIONS)
    if unknown:
        raise ValueError(f"hmac verifier: unknown options {unknown}")
    header = _option(options, "header", None)
    if not header:
        raise ValueError("hmac verifier needs options.header (the signature header's name)")
    algorithm = (_option(options, "algorithm", "sha256") or "").lower()
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"hmac verifier: algorithm must be one of {sorted(_ALGORITHMS)}")
    encoding = (_option(options, "encoding", "hex") or "").lower()
    if encoding not in _ENCODINGS:
        raise ValueError(f"hmac verifier: encoding must be one of {list(_ENCODINGS)}")
    template_text = _option(options, "signed_content", "{body}") or ""
    template: list[tuple[bool, str]] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template_text):
        if match.start() > position:
            template.append((False, template_text[position : match.start()]))
        template.append((True, match.group(1)))
        position = match.end()
    if position < len(template_text):
        template.append((False, template_text[position:]))
    used = {text for is_ph, text in template if is_ph}
    if "body" not in used:
        raise ValueError("hmac verifier: signed_content must include {body}")
    timestamp_header = _option(options, "timestamp_header", None)
    id_header = _option(options, "id_header", None)
    if "timestamp" in used and not timestamp_header:
        raise ValueError("hmac verifier: signed_content uses {timestamp} but no timestamp_header")
    if "id" in used and not id_header:
        raise ValueError("hmac verifier: signed_content uses {id} but no id_header")
    return HmacRecipe(
        header=header.lower(),
        algorithm=algorithm,
        encoding=encoding,
        prefix=_option(options, "prefix", "") or "",
        template=tuple(template),
        timestamp_header=timestamp_header.lower() if timestamp_header else None,
        id_header=id_header.lower() if id_header else None,
    )


def _decode(recipe: HmacRecipe, value: str) -> bytes:
    try:
        if recipe.encoding == "hex":
            return bytes.fromhex(value)
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (ValueError, binascii.Error):
        raise VerificationError("malformed_header") from None


@dataclass(frozen=True, slots=True)
class HmacRecipeVerifier:
    """Verifies per the recipe; a ``timestamp_header`` always gets the tolerance check."""

    recipe: HmacRecipe
    secrets: Sequence[str]
    tolerance_seconds: int
    name: str = field(default="hmac")

    def verify(self, request: WebhookRequest, *, now: float) -> None:
        """Check headers, the timestamp when configured, then the HMAC under each secret."""
        recipe = self.recipe
        value = require_header(request, recipe.header)
        timestamp = msg_id = ""
        if recipe.timestamp_header:
            timestamp = require_header(request, recipe.timestamp_header)
            check_timestamp(timestamp, now=now, tolerance_seconds=self.tolerance_seconds)
        if recipe.id_header:
            msg_id = require_header(request, recipe.id_header)
        if not value.startswith(recipe.prefix):
            raise VerificationError("malformed_header")
        received = _decode(recipe, value.removeprefix(recipe.prefix))
        content = recipe.content(body=request.body, timestamp=timestamp, msg_id=msg_id)
        require_match((recipe.digest(s, content) for s in self.secrets), received)


@dataclass(frozen=True, slots=True)
class HmacRecipeSigner:
    """Signs per the recipe, setting the timestamp and id headers it names."""

    recipe: HmacRecipe
    secret: str

    def sign(self, *, body: bytes, url: str, now: float, msg_id: str) -> dict[str, str]:
        """Return the signature header, plus the timestamp and id headers when configured."""
        recipe = self.recipe
        timestamp = str(int(now))
        content = recipe.content(body=body, timestamp=timestamp, msg_id=msg_id)
        headers = {recipe.header: recipe.encode(recipe.digest(self.secret, content))}
        if recipe.timestamp_header:
            headers[recipe.timestamp_header] = timestamp
        if recipe.id_header:
            headers[recipe.id_header] = msg_id
        return headers


def _verifier(c: ProviderConfig) -> HmacRecipeVerifier:
    return HmacRecipeVerifier(parse_recipe(c.options), c.require_secrets(), c.tolerance_seconds)


def _signer(c: ProviderConfig) -> HmacRecipeSigner:
    return HmacRecipeSigner(parse_recipe(c.options), c.require_secrets()[0])


def recipe_verifier(c: ProviderConfig, recipe: HmacRecipe) -> HmacRecipeVerifier:
    """A provider whose scheme is a fixed recipe (Razorpay's, Lemon Squeezy's): its verifier,
    under the provider's name, taking no options."""
    c.allow_options()
    return HmacRecipeVerifier(recipe, c.require_secrets(), c.tolerance_seconds, name=c.name)


def recipe_signer(c: ProviderConfig, recipe: HmacRecipe) -> HmacRecipeSigner:
    """The signing twin of ``recipe_verifier``."""
    c.allow_options()
    return HmacRecipeSigner(recipe, c.require_secrets()[0])


def _id_header(options: Mapping[str, object]) -> tuple[Spec, ...]:
    # The recipe's id header when it has one, before the body hash.
    id_header = options.get("id_header")
    return (Spec("header", id_header.lower()),) if isinstance(id_header, str) and id_header else ()


def _unsigned_id_header(options: Mapping[str, object]) -> str | None:
    # An id header that signed_content leaves out: a captured delivery re-sent with a new id
    # verifies, and is a new event.
    recipe = parse_recipe(options)
    signed = any(is_ph and text == "id" for is_ph, text in recipe.template)
    return None if recipe.id_header is None or signed else recipe.id_header


# No provider convention: the key is the body hash unless the recipe names an id header.
PROVIDER = Provider(
    name="hmac",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="HMAC recipe (from options)",
        family="generic",
        signs="what the options say: an HMAC of a template over the body, timestamp and id",
        unsigned="the id header unless signed_content names {id} (a warning at start-up)",
        proof="vectors",
        proof_source="GitHub's documented example, as a recipe",
        window_source="none documented: the recipe's timestamp_header, when set",
    ),
    option_key_specs=_id_header,
    unsigned_key_header=_unsigned_id_header,
)
