"""What the SDK proofs share: a source of one scheme, and the sample ``inbox send`` posts."""

from __future__ import annotations

from typing import Any

from inbox import Settings
from inbox._providers import WebhookRequest
from inbox._receiving.samples import SampleRequest, build_sample
from inbox._receiving.source_config import source_extraction, source_verifier


def sent(scheme: str, *, now: float, **table: Any) -> SampleRequest:
    """The delivery ``inbox send`` makes for a source of ``scheme`` configured by ``table``."""
    [source] = Settings(sources=[{"name": "src", "verifier": scheme, **table}]).sources
    return build_sample(source, url="https://hooks.example.com/webhooks/src", now=now)


def received(
    scheme: str, headers: dict[str, str], body: bytes, *, now: float, **table: Any
) -> tuple[str | None, str | None]:
    """Verify a delivery as a source of ``scheme`` would (raising if it does not verify) and
    return its key and type."""
    [source] = Settings(sources=[{"name": "src", "verifier": scheme, **table}]).sources
    lowered = {k.lower(): v for k, v in headers.items()}
    request = WebhookRequest("POST", "https://hooks.example.com/webhooks/src", lowered, body)
    source_verifier(source).verify(request, now=now)
    return source_extraction(source).extract(request)
