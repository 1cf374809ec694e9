"""The factories that turn configuration (a scheme name, secrets, keys, options) into objects.

Every configuration mistake is a ``ValueError`` raised here, at start-up, naming the scheme
and what is missing; nothing is left to fail on the first real webhook.

Each factory imports its scheme's module itself: a scheme (and ``cryptography``, for the
asymmetric ones) loads when a source first uses it, never on ``import inbox``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

from ._base import BodySigner, Signer, Verifier

__all__ = ["SCHEMES", "build_signer", "build_verifier", "sign_request"]

_T = TypeVar("_T")
_NO_OPTIONS: Mapping[str, object] = MappingProxyType({})


class _Config:
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


def _standard_webhooks_verifier(c: _Config) -> Verifier:
    from ._standard_webhooks import StandardWebhooksVerifier, decode_public_key, decode_secret

    c.allow_options()
    secrets = [decode_secret(s) for s in c.secrets]
    keys = [decode_public_key(k) for k in c.key_list()]
    if not secrets and not keys:
        raise ValueError(f"{c.name}: needs whsec_ secrets or whpk_ public_keys (or both)")
    return StandardWebhooksVerifier(secrets, keys, c.tolerance_seconds)


def _stripe_verifier(c: _Config) -> Verifier:
    from ._stripe import StripeVerifier

    c.allow_options()
    return StripeVerifier(c.require_secrets(), c.tolerance_seconds)


def _github_verifier(c: _Config) -> Verifier:
    from ._github import GitHubVerifier

    c.allow_options()
    return GitHubVerifier(c.require_secrets())


def _shopify_verifier(c: _Config) -> Verifier:
    from ._shopify import ShopifyVerifier

    c.allow_options()
    return ShopifyVerifier(c.require_secrets())


def _slack_verifier(c: _Config) -> Verifier:
    from ._slack import SlackVerifier

    c.allow_options()
    return SlackVerifier(c.require_secrets(), c.tolerance_seconds)


def _twilio_verifier(c: _Config) -> Verifier:
    from ._twilio import TwilioVerifier

    c.allow_options("public_url", "shared_key_id")  # the id only signs: the header names it
    return TwilioVerifier(c.require_secrets(), c.string_option("public_url"))


def _alipay_verifier(c: _Config) -> Verifier:
    from ._alipay import AlipayVerifier
    from ._keys import load_rsa_public_key

    c.allow_options()
    keys = [load_rsa_public_key(k) for k in c.key_list()]
    if not keys:
        raise ValueError(f"{c.name}: at least one Alipay public key (PEM) is required")
    return AlipayVerifier(keys)


def _wechatpay_verifier(c: _Config) -> Verifier:
    from ._keys import load_rsa_public_key
    from ._wechatpay import WechatPayVerifier

    c.allow_options()
    if not isinstance(c.public_keys, Mapping) or not c.public_keys:
        raise ValueError(
            f"{c.name}: public_keys must be a table of Wechatpay-Serial -> PEM "
            "(platform certificate or public key)"
        )
    keys = {serial: load_rsa_public_key(pem) for serial, pem in c.public_keys.items()}
    return WechatPayVerifier(keys, c.tolerance_seconds)


def _hmac_verifier(c: _Config) -> Verifier:
    from ._hmac_recipe import HmacRecipeVerifier, parse_recipe

    return HmacRecipeVerifier(parse_recipe(c.options), c.require_secrets(), c.tolerance_seconds)


def _none_verifier(c: _Config) -> Verifier:
    from ._none import NoneVerifier

    c.allow_options()
    return NoneVerifier()


def _standard_webhooks_signer(c: _Config) -> Signer:
    from ._standard_webhooks import StandardWebhooksSigner, decode_secret, decode_secret_key

    c.allow_options()
    secrets = [decode_secret(s) for s in c.secrets]
    key = decode_secret_key(c.private_key) if c.private_key else None
    if not secrets and key is None:
        raise ValueError(f"{c.name}: needs whsec_ secrets or a whsk_ private_key to sign")
    return StandardWebhooksSigner(secrets, key)


def _stripe_signer(c: _Config) -> Signer:
    from ._stripe import StripeSigner

    c.allow_options()
    return StripeSigner(c.require_secrets())


def _github_signer(c: _Config) -> Signer:
    from ._github import GitHubSigner

    c.allow_options()
    return GitHubSigner(c.require_secrets()[0])


def _shopify_signer(c: _Config) -> Signer:
    from ._shopify import ShopifySigner

    c.allow_options()
    return ShopifySigner(c.require_secrets()[0])


def _slack_signer(c: _Config) -> Signer:
    from ._slack import SlackSigner

    c.allow_options()
    return SlackSigner(c.require_secrets()[0])


def _twilio_signer(c: _Config) -> Signer:
    from ._twilio import TwilioSigner

    c.allow_options("public_url", "shared_key_id")  # one options table serves both directions
    return TwilioSigner(c.require_secrets()[0], c.string_option("shared_key_id"))


def _alipay_signer(c: _Config) -> Signer:
    from ._alipay import AlipaySigner
    from ._keys import load_rsa_private_key

    c.allow_options()
    return AlipaySigner(load_rsa_private_key(c.require_private_key()))


def _wechatpay_signer(c: _Config) -> Signer:
    from ._keys import load_rsa_private_key
    from ._wechatpay import WechatPaySigner

    c.allow_options("serial")
    serial = c.string_option("serial")
    if not serial:
        raise ValueError(f"{c.name}: option 'serial' (the Wechatpay-Serial to send) is required")
    return WechatPaySigner(load_rsa_private_key(c.require_private_key()), serial)


def _hmac_signer(c: _Config) -> Signer:
    from ._hmac_recipe import HmacRecipeSigner, parse_recipe

    return HmacRecipeSigner(parse_recipe(c.options), c.require_secrets()[0])


def _none_signer(c: _Config) -> Signer:
    from ._none import NoneSigner

    c.allow_options()
    return NoneSigner()


_VERIFIERS: dict[str, Callable[[_Config], Verifier]] = {
    "alipay": _alipay_verifier,
    "github": _github_verifier,
    "hmac": _hmac_verifier,
    "none": _none_verifier,
    "shopify": _shopify_verifier,
    "slack": _slack_verifier,
    "standard-webhooks": _standard_webhooks_verifier,
    "stripe": _stripe_verifier,
    "twilio": _twilio_verifier,
    "wechatpay": _wechatpay_verifier,
}

_SIGNERS: dict[str, Callable[[_Config], Signer]] = {
    "alipay": _alipay_signer,
    "github": _github_signer,
    "hmac": _hmac_signer,
    "none": _none_signer,
    "shopify": _shopify_signer,
    "slack": _slack_signer,
    "standard-webhooks": _standard_webhooks_signer,
    "stripe": _stripe_signer,
    "twilio": _twilio_signer,
    "wechatpay": _wechatpay_signer,
}

SCHEMES: tuple[str, ...] = tuple(sorted(_VERIFIERS))
"""Every scheme name ``build_verifier`` and ``build_signer`` accept."""


def _lookup(table: dict[str, _T], name: str) -> _T:
    try:
        return table[name]
    except KeyError:
        raise ValueError(
            f"unknown verifier {name!r}; expected one of: {', '.join(SCHEMES)}"
        ) from None


def build_verifier(
    name: str,
    *,
    secrets: Sequence[str] = (),
    public_keys: Sequence[str] | Mapping[str, str] = (),
    tolerance_seconds: int = 300,
    options: Mapping[str, object] = _NO_OPTIONS,
) -> Verifier:
    """Build the verifier for scheme ``name``; several secrets/keys mean rotation.

    Raises ``ValueError`` for an unknown scheme, a missing secret or key, an unloadable key
    or an unknown option.
    """
    build = _lookup(_VERIFIERS, name)
    config = _Config(
        name,
        secrets=secrets,
        public_keys=public_keys,
        private_key=None,
        tolerance_seconds=tolerance_seconds,
        options=options,
    )
    return build(config)


def build_signer(
    name: str,
    *,
    secrets: Sequence[str] = (),
    private_key: str | None = None,
    options: Mapping[str, object] = _NO_OPTIONS,
) -> Signer:
    """Build the signer for scheme ``name`` (for ``inbox send`` and tests).

    Raises ``ValueError`` like ``build_verifier``.
    """
    build = _lookup(_SIGNERS, name)
    config = _Config(
        name,
        secrets=secrets,
        public_keys=(),
        private_key=private_key,
        tolerance_seconds=0,
        options=options,
    )
    return build(config)


def sign_request(
    signer: Signer, *, body: bytes, url: str, now: float, msg_id: str
) -> tuple[bytes, dict[str, str]]:
    """Sign a request with any signer: return the body to send and the headers to add.

    Most schemes only add headers; Alipay's signature goes into the body, so this is the
    one call that works for every scheme.
    """
    if isinstance(signer, BodySigner):
        body = signer.sign_body(body=body, url=url, now=now, msg_id=msg_id)
    return body, signer.sign(body=body, url=url, now=now, msg_id=msg_id)
