"""Telegram: ``X-Telegram-Bot-Api-Secret-Token``, the ``secret_token`` given to setWebhook.

The body is not signed (see ``_token``). The key is the update's ``update_id``; an update has
no type field (it carries one of ``message``, ``callback_query``, ...), so a source that routes
by kind sets ``type_from`` itself or reads the body in its handler.
"""

from __future__ import annotations

import secrets
from typing import Any

from ._base import Signer, Verifier
from ._provider import About, Provider, ProviderConfig, Sample, specs
from ._token import token_signer, token_verifier

__all__: list[str] = []

_HEADER = "x-telegram-bot-api-secret-token"


def _verifier(c: ProviderConfig) -> Verifier:
    return token_verifier(c, _HEADER)


def _signer(c: ProviderConfig) -> Signer:
    return token_signer(c, _HEADER)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "message": {
            "message_id": 1,
            "date": int(s.now),
            "chat": {"id": 1, "type": "private"},
            "text": "hello from inbox send",
        }
    }


def _new_id() -> str:
    return str(secrets.randbelow(2**31))


def _dev_secret() -> str:
    # setWebhook takes 1-256 characters of A-Z, a-z, 0-9, _ and -.
    return secrets.token_hex(24)


PROVIDER = Provider(
    name="telegram",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Telegram Bot API",
        family="messaging",
        signs="nothing: X-Telegram-Bot-Api-Secret-Token carries setWebhook's secret_token",
        unsigned="the body, with update_id (the key)",
        proof="docs-only",
        proof_source="https://core.telegram.org/bots/api#setwebhook",
    ),
    key_specs=specs("json:/update_id"),
    sample=_sample,
    new_id=_new_id,
    sample_type="message",
    dev_secret=_dev_secret,
)
