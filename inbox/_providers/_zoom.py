"""Zoom: ``x-zm-signature: v0=<hex>``, HMAC-SHA256 of ``v0:{x-zm-request-timestamp}:{body}``
under the app's webhook secret token. It is Slack's scheme under other header names, so it
is checked by Slack's verifier in Zoom's layout.

Zoom documents no window: the signed timestamp gets the default one, or the source's
``tolerance_seconds``.
A notification carries no delivery id, so the key is the body's hash (a retry re-sends the
same body; ``event_ts`` tells two events apart); the type is the body's ``event``.

``endpoint.url_validation`` (sent, signed, when the endpoint is saved and every 72 hours
after) is answered with its ``plainToken`` and ``encryptedToken``, the hex HMAC-SHA256 of
the token under the secret token that signed the request, and not stored.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Sequence
from typing import Any

from ._base import WebhookRequest, matches_any
from ._provider import About, Provider, ProviderConfig, Sample, dev_token, specs
from ._slack import SlackSigner, SlackVerifier, V0Headers, v0_hex_hmac

__all__ = ["ZOOM"]

ZOOM = V0Headers("x-zm-request-timestamp", "x-zm-signature")
_VALIDATION = "endpoint.url_validation"


def _verifier(c: ProviderConfig) -> SlackVerifier:
    c.allow_options()
    return SlackVerifier(c.require_secrets(), c.tolerance_seconds, ZOOM, name="zoom")


def _signer(c: ProviderConfig) -> SlackSigner:
    c.allow_options()
    return SlackSigner(c.require_secrets()[0], ZOOM)


def _sample(s: Sample) -> dict[str, Any]:
    return {
        "event_ts": int(s.now * 1000),
        "payload": {
            "account_id": "inbox-send",
            "object": {"uuid": s.msg_id, "id": 85746065432, "topic": "hello from inbox send"},
        },
    }


def _signing_secret(request: WebhookRequest, secrets: Sequence[str]) -> str | None:
    """The secret token the validation was signed with: Zoom checks the answer under it."""
    timestamp = request.headers.get(ZOOM.timestamp, "").strip()
    received = request.headers.get(ZOOM.signature, "").partition("=")[2].lower().encode()
    for secret in secrets:
        if matches_any([v0_hex_hmac(secret, timestamp, request.body).encode()], received):
            return secret
    return None


def _url_validation(request: WebhookRequest, secrets: Sequence[str]) -> dict[str, Any] | None:
    """Zoom enables an endpoint only once it proves that it holds the secret token."""
    if _VALIDATION.encode() not in request.body:
        return None  # every event passes here: parse no body that cannot be one
    try:
        payload = json.loads(request.body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict) or payload.get("event") != _VALIDATION:
        return None
    inner = payload.get("payload")
    token = inner.get("plainToken") if isinstance(inner, dict) else None
    secret = _signing_secret(request, secrets)
    if not isinstance(token, str) or not token or secret is None:
        return None
    encrypted = hmac.new(secret.encode(), token.encode(), hashlib.sha256).hexdigest()
    return {"plainToken": token, "encryptedToken": encrypted}


PROVIDER = Provider(
    name="zoom",
    verifier=_verifier,
    signer=_signer,
    about=About(
        title="Zoom",
        family="messaging",
        signs="HMAC-SHA256 hex of `v0:{timestamp}:{body}` (x-zm-signature: v0=)",
        unsigned="nothing: no delivery id is sent (the key is the body's hash); event is signed",
        proof="docs-only",
        proof_source="https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
        window_source="none documented (Zoom's Verify webhook events)",
        handshake="endpoint.url_validation, signed like any event (when the endpoint is saved,"
        " then every 72 hours): plainToken and encryptedToken, its hex HMAC-SHA256 under the"
        " secret token (as Zoom's webhook-sample), not stored",
    ),
    key_specs=specs("body-sha256"),
    type_specs=specs("json:/event"),
    sample=_sample,
    new_id=lambda: uuid.uuid4().hex,
    sample_type="meeting.started",
    handshake=_url_validation,
    dev_secret=dev_token(),
)
