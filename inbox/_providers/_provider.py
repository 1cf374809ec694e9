"""What a provider is: one record (``Provider``) that the generic code asks, built from the
arguments of one ``build_*`` call (``ProviderConfig``).

A provider's module (``_stripe``, ``_alipay``, ...) holds its verifier and signer and ends with
its ``PROVIDER``: how to build both from a source's configuration, where its deliveries carry
the idempotency key and the event type, the sample ``inbox send`` signs, and what the provider
expects back (a reply body, a handshake). ``inbox._core.config.schemes`` names the module.
"""

from __future__ import annotations

import datetime
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from inbox._core.config.specs import Spec, parse_spec

from ._base import Signer, Verifier, WebhookRequest

__all__ = [
    "DEFAULT_TOLERANCE_SECONDS",
    "FAMILIES",
    "PROOFS",
    "VERIFY_TOKEN_OPTION",
    "About",
    "Family",
    "GetHandshakeKeys",
    "HandshakeReply",
    "Proof",
    "Provider",
    "ProviderConfig",
    "Sample",
    "dev_token",
    "iso_time",
    "public_url_option",
    "signing_key_id_options",
    "specs",
]

# What a handshake answers: JSON (a mapping) or plain text.
HandshakeReply = Mapping[str, Any] | str

# How a scheme was shown to interoperate with the provider, strongest first. A record's claim
# is held by tests/verifiers/test_providers_proofs.py: each level needs its kind of test.
Proof = Literal["sdk-both-ways", "sdk-verifies", "vectors", "docs-only", "n/a"]
PROOFS: tuple[Proof, ...] = ("sdk-both-ways", "sdk-verifies", "vectors", "docs-only", "n/a")


# Kinds of provider, in the order docs/providers.md sorts its table by, with the words of
# its "kind" column: a reader looks for their provider among its peers, not among 40 rows.
Family = Literal["payments", "messaging", "business-apps", "developer-tools", "generic"]
FAMILIES: Mapping[Family, str] = {
    "payments": "payments",
    "messaging": "communication",
    "business-apps": "business apps",
    "developer-tools": "developer tools",
    "generic": "generic",
}

# The replay window of a signed time whose provider documents none: the window most
# providers that document one choose (Stripe, Slack, Standard Webhooks, HubSpot, Plaid).
DEFAULT_TOLERANCE_SECONDS = 300

# The source option naming the environment variable that holds the token of a GET handshake
# (Meta's hub.verify_token): an option holds no secret, as `inbox config check` prints
# options whole.
VERIFY_TOKEN_OPTION = "verify_token_env"  # noqa: S105 -- an option's name, not a token


class ProviderConfig:
    """The arguments of one ``build_*`` call, with checks that word their errors alike."""

    def __init__(
        self,
        name: str,
        *,
        secrets: Sequence[str],
        public_keys: Sequence[str] | Mapping[str, str],
        private_key: str | None,
        tolerance_seconds: int,
        options: Mapping[str, object],
    ) -> None:
        if isinstance(secrets, str):
            raise ValueError(f"{name}: secrets must be a list of strings, not one string")
        self.name = name
        self.secrets = [s for s in secrets if s]
        self.public_keys = public_keys
        self.private_key = private_key
        self.tolerance_seconds = tolerance_seconds
        self.options = options
        if tolerance_seconds < 0:
            raise ValueError(f"{name}: tolerance_seconds must not be negative")

    def allow_options(self, *allowed: str) -> None:
        unknown = sorted(set(self.options) - set(allowed))
        if unknown:
            hint = f"; it takes {sorted(allowed)}" if allowed else "; it takes none"
            raise ValueError(f"{self.name}: unknown options {unknown}{hint}")

    def require_secrets(self) -> list[str]:
        if not self.secrets:
            raise ValueError(f"{self.name}: at least one secret is required (secrets = [...])")
        return self.secrets

    def key_list(self) -> list[str]:
        if isinstance(self.public_keys, (str, Mapping)):
            raise ValueError(f"{self.name}: public_keys must be a list of PEM strings")
        return [k for k in self.public_keys if k]

    def require_private_key(self) -> str:
        if not self.private_key:
            raise ValueError(f"{self.name}: a private_key is required to sign")
        return self.private_key

    def string_option(self, key: str) -> str | None:
        value = self.options.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{self.name}: option {key!r} must be a string")
        return value or None


@dataclass(frozen=True, slots=True)
class GetHandshakeKeys:
    """What a source answers a GET handshake with: Meta's verify token (from the variable its
    ``verify_token_env`` option names), or Braintree's private keys (its secrets) under the
    public key its ``public_key`` option names."""

    verify_token: str | None = field(default=None, repr=False)
    secrets: Sequence[str] = field(default=(), repr=False)
    options: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Sample:
    """What a sample for ``inbox send`` is built from: its delivery id, clock and type."""

    msg_id: str
    now: float
    event_type: str


def specs(*texts: str) -> tuple[Spec, ...]:
    return tuple(parse_spec(t) for t in texts)


def iso_time(now: float) -> str:
    return datetime.datetime.fromtimestamp(now, datetime.UTC).isoformat(timespec="seconds")


def _plain_sample(sample: Sample) -> dict[str, Any]:
    # No provider shape: the id in the body keeps a body-hash key fresh.
    return {"id": sample.msg_id, "message": "hello from inbox send"}


def _no_headers(_sample: Sample) -> dict[str, str]:
    return {}


def _hex_id() -> str:
    return uuid.uuid4().hex


def dev_token(prefix: str = "dev_") -> Callable[[], str]:
    """A made-up shared secret: ``prefix`` and random URL-safe text."""
    return lambda: prefix + secrets.token_urlsafe(24)


def _as_configured(options: Mapping[str, Any], _source: Any) -> dict[str, Any]:
    return dict(options)


def signing_key_id_options(
    option: str,
) -> tuple[
    Callable[[Mapping[str, Any], Any], dict[str, Any]],
    Callable[[Mapping[str, Any], Any], dict[str, Any]],
]:
    """A scheme whose ``public_keys`` is a table of key id -> key (WeChat Pay's serials,
    Plaid's kids): ``option`` names the id that ``inbox send`` signs as, so the verifier never
    takes it, and without it the signer takes the table's first id."""

    def for_verifier(options: Mapping[str, Any], _source: Any) -> dict[str, Any]:
        return {k: v for k, v in options.items() if k != option}

    def for_signer(options: Mapping[str, Any], source: Any) -> dict[str, Any]:
        merged = dict(options)
        if option not in merged and isinstance(source.public_keys, Mapping) and source.public_keys:
            merged[option] = next(iter(source.public_keys))
        return merged

    return for_verifier, for_signer


def public_url_option(options: Mapping[str, Any], source: Any) -> dict[str, Any]:
    """A scheme that signs the URL it calls (Twilio, Square): the source's ``public_url``
    setting as its ``public_url`` option, unless the options give one."""
    merged = dict(options)
    if source.public_url:
        merged.setdefault("public_url", source.public_url)
    return merged


@dataclass(frozen=True, slots=True, kw_only=True)
class About:
    """What ``inbox providers`` and docs/providers.md say of a scheme, for a user on call."""

    title: str
    family: Family
    # What the signature covers, and what travels beside it unsigned (ids, type headers).
    signs: str
    unsigned: str
    proof: Proof
    # The SDK (PyPI name) or the page the vectors or the algorithm came from.
    proof_source: str
    # The replay window the provider documents, in seconds: the verifier's default, which a
    # source's tolerance_seconds overrides. None: it signs no time, or documents no window.
    tolerance_seconds: int | None = None
    # Where that window is documented (a page, or the SDK whose default it is); for a signed
    # time whose provider documents no window, "none documented" and where we looked (then
    # DEFAULT_TOLERANCE_SECONDS applies). "" when no time is signed.
    window_source: str = ""
    # The handshake, in words ("" when there is none).
    handshake: str = ""
    # What a retry carries, as the provider's docs (or SDK) tell: whether it keeps the key,
    # and whether it is signed anew ("" where not recorded).
    retries: str = ""

    @property
    def default_window(self) -> int | None:
        """The replay window a source gets unless it sets ``tolerance_seconds``; None when
        the scheme signs no time."""
        if self.tolerance_seconds is not None:
            return self.tolerance_seconds
        return DEFAULT_TOLERANCE_SECONDS if self.window_source else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """One provider's whole story, asked by receiving, ``inbox send`` and the registry."""

    name: str
    verifier: Callable[[ProviderConfig], Verifier]
    signer: Callable[[ProviderConfig], Signer]
    about: About
    # Where its deliveries carry the idempotency key / event type, tried in order.
    key_specs: tuple[Spec, ...] = field(default_factory=lambda: specs("body-sha256"))
    type_specs: tuple[Spec, ...] = ()
    # Key specs that a source's options add in front of key_specs (the hmac recipe's id).
    option_key_specs: Callable[[Mapping[str, object]], tuple[Spec, ...]] | None = None
    # `inbox send`: a body in the provider's shape, the headers its deliveries always carry,
    # a delivery id in its spelling, the type of a sample, and whether it posts a form.
    # A sample is a JSON object, or an array where the provider posts one (HubSpot).
    sample: Callable[[Sample], dict[str, Any] | list[Any]] = _plain_sample
    envelope: Callable[[Sample], dict[str, str]] = _no_headers
    new_id: Callable[[], str] = _hex_id
    sample_type: str = "inbox.test"
    posts_form: bool = False
    # A source's settings as this provider's verifier / signer options (the source is a
    # SourceSettings: public_url, public_keys).
    verifier_options: Callable[[Mapping[str, Any], Any], dict[str, Any]] = _as_configured
    signer_options: Callable[[Mapping[str, Any], Any], dict[str, Any]] = _as_configured
    # The body and content type of the acknowledgement, when the provider wants its own.
    accepted_reply: tuple[bytes, str] | None = None
    # A signed handshake that is no event, given the request and the source's secrets (Zoom
    # answers with an HMAC under its secret token): the reply to send, not stored — a mapping
    # is sent as JSON, text as text/plain (Twitch wants its challenge back verbatim).
    handshake: Callable[[WebhookRequest, Sequence[str]], HandshakeReply | None] | None = None
    # A GET the provider sends, unsigned, to prove the endpoint before any event (WebSub's
    # hub.challenge, which Meta sends; Braintree's bt_challenge), given the request and what
    # the source holds for it: the text to send back, or a VerificationError whose reason
    # is logged (refused, 403). A source whose scheme has none answers a GET 405, like any
    # other method but POST.
    get_handshake: Callable[[WebhookRequest, GetHandshakeKeys], str] | None = None
    # Accepts anything: the receiver warns at start-up.
    unverified: bool = False
    # The header a source's options take the key from without signing it (the hmac
    # recipe's id_header outside signed_content), else None: the receiver warns at start-up.
    unsigned_key_header: Callable[[Mapping[str, object]], str | None] | None = None
    # A made-up shared secret in the provider's format, for `inbox dev` and inbox.testing
    # (None: the scheme signs with keys, or with nothing).
    dev_secret: Callable[[], str] | None = None
