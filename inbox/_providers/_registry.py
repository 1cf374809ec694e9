"""The registry's lookups: a scheme's name -> its one record (``Provider``), and the factories
that turn configuration (secrets, keys, options) into a verifier or a signer through it.

Every configuration mistake is a ``ValueError`` raised here, at start-up, naming the scheme
and what is missing; nothing is left to fail on the first real webhook.

A scheme's module is imported when its record is first asked for: a scheme (and
``cryptography``, for the asymmetric ones) loads when a source first uses it, never on
``import inbox``. The names live in ``inbox._core.config.schemes`` (one line per provider).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import cache
from types import MappingProxyType

from inbox._core.config.schemes import PROVIDER_MODULES, SCHEMES

from ._base import BodySigner, Signer, Verifier
from ._provider import DEFAULT_TOLERANCE_SECONDS, Provider, ProviderConfig

__all__ = ["SCHEMES", "build_signer", "build_verifier", "provider", "sign_request"]

_NO_OPTIONS: Mapping[str, object] = MappingProxyType({})


@cache
def provider(name: str) -> Provider:
    """The record of scheme ``name``; ``ValueError`` for an unknown one."""
    try:
        module = PROVIDER_MODULES[name]
    except KeyError:
        raise ValueError(
            f"unknown verifier {name!r}; expected one of: {', '.join(SCHEMES)}"
        ) from None
    record: Provider = importlib.import_module(module).PROVIDER
    return record


def build_verifier(
    name: str,
    *,
    secrets: Sequence[str] = (),
    public_keys: Sequence[str] | Mapping[str, str] = (),
    tolerance_seconds: int | None = None,
    options: Mapping[str, object] = _NO_OPTIONS,
) -> Verifier:
    """Build the verifier for scheme ``name``; several secrets/keys mean rotation.

    ``tolerance_seconds`` bounds a signed time; None takes the window the provider
    documents (its record's), else ``DEFAULT_TOLERANCE_SECONDS``.

    Raises ``ValueError`` for an unknown scheme, a missing secret or key, an unloadable key
    or an unknown option.
    """
    record = provider(name)
    if tolerance_seconds is None:
        tolerance_seconds = record.about.default_window or DEFAULT_TOLERANCE_SECONDS
    config = ProviderConfig(
        name,
        secrets=secrets,
        public_keys=public_keys,
        private_key=None,
        tolerance_seconds=tolerance_seconds,
        options=options,
    )
    return record.verifier(config)


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
    build = provider(name).signer
    config = ProviderConfig(
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
