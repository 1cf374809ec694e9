"""From a ``[[sources]]`` table to the objects that serve it: verifier, signer, extraction.

The few places where a source's settings do not map one-to-one onto the verifier factories
are decided here, once, for the receiver and ``inbox send`` alike:

- ``public_url`` is a source setting; the Twilio verifier takes it as an option.
- ``serial`` (the ``Wechatpay-Serial`` that ``inbox send`` signs as) is a signer option; the
  verifier refuses unknown options, so it is removed from the verifier's. Without it, the
  first serial of the ``public_keys`` table is used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from inbox._core.errors import ConfigError
from inbox._core.settings import SourceSettings
from inbox._providers import Signer, Verifier, build_signer, build_verifier
from inbox._receiving.extract import Extraction, extraction_for

__all__ = ["source_extraction", "source_signer", "source_verifier"]

_SIGNER_ONLY_OPTIONS: Mapping[str, frozenset[str]] = {"wechatpay": frozenset({"serial"})}


def _config_error(source: SourceSettings, exc: ValueError) -> ConfigError:
    message = f"source {source.name!r}: {exc}"
    variable = source.secrets_env
    if variable and not source.secret_values():
        state = "empty" if variable in os.environ else "not set"
        message += (
            f"; it reads secrets_env = {variable!r}, and the environment variable {variable}"
            f" is {state}: set it to the secret, several separated by commas for rotation"
            f" ({variable}=new,old)"
        )
    return ConfigError(message, field=f"sources.{source.name}")


def source_verifier(source: SourceSettings) -> Verifier:
    """The source's verifier; a configuration mistake is a ``ConfigError`` naming it."""
    skip = _SIGNER_ONLY_OPTIONS.get(source.verifier, frozenset())
    options: dict[str, Any] = {k: v for k, v in source.options.items() if k not in skip}
    if source.verifier == "twilio" and source.public_url:
        options.setdefault("public_url", source.public_url)
    try:
        return build_verifier(
            source.verifier,
            secrets=source.secret_values(),
            public_keys=source.public_keys,
            tolerance_seconds=source.tolerance_seconds,
            options=options,
        )
    except ValueError as exc:
        raise _config_error(source, exc) from exc


def source_signer(source: SourceSettings) -> Signer:
    """A signer producing requests that ``source_verifier(source)`` accepts."""
    options: dict[str, Any] = dict(source.options)
    options.pop("public_url", None)
    if (
        source.verifier == "wechatpay"
        and "serial" not in options
        and isinstance(source.public_keys, Mapping)
        and source.public_keys
    ):
        options["serial"] = next(iter(source.public_keys))
    try:
        return build_signer(
            source.verifier,
            secrets=source.secret_values(),
            private_key=source.private_key_value(),
            options=options,
        )
    except ValueError as exc:
        raise _config_error(source, exc) from exc


def source_extraction(source: SourceSettings) -> Extraction:
    """Where the source's idempotency key and event type come from."""
    return extraction_for(
        source.verifier,
        key_from=source.key_from,
        type_from=source.type_from,
        options=source.options,
    )
