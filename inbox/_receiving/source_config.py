"""From a ``[[sources]]`` table to the objects that serve it: verifier, signer, extraction.

Where a source's settings do not map one-to-one onto a provider's options (Twilio's
``public_url``, WeChat Pay's signing ``serial``), the provider's record says how
(``verifier_options`` / ``signer_options``), for the receiver and ``inbox send`` alike.
"""

from __future__ import annotations

import os

from inbox._core.config.settings import SourceSettings
from inbox._core.errors import ConfigError
from inbox._providers import Signer, Verifier, build_signer, build_verifier, provider
from inbox._providers._provider import VERIFY_TOKEN_OPTION
from inbox._receiving.extract import Extraction, extraction_for

__all__ = ["source_extraction", "source_signer", "source_verifier", "source_verify_token"]


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
    try:
        options = provider(source.verifier).verifier_options(source.options, source)
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
    try:
        options = provider(source.verifier).signer_options(source.options, source)
        options.pop("public_url", None)  # a verifier's option (Twilio's), never a signer's
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
        ordering_key=source.ordering_key,
        order_by=source.order_by,
    )


def source_verify_token(source: SourceSettings) -> str | None:
    """The token the source's GET handshake expects (Meta's hub.verify_token), read from the
    environment variable its ``verify_token_env`` option names; None when its scheme has no
    GET handshake or the option is not set (every subscription is then refused).

    A variable that is unset or empty is a ``ConfigError``: it would refuse them too, silently.
    """
    variable = source.options.get(VERIFY_TOKEN_OPTION)
    if provider(source.verifier).get_handshake is None or not isinstance(variable, str):
        return None
    value = os.environ.get(variable, "").strip()
    if not value:
        state = "empty" if variable in os.environ else "not set"
        raise ConfigError(
            f"source {source.name!r}: {VERIFY_TOKEN_OPTION} = {variable!r}, and the environment"
            f" variable {variable} is {state}: set it to the verify token entered in the"
            " provider's dashboard",
            field=f"sources.{source.name}",
        )
    return value
