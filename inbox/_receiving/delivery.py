"""A delivery as the receiver's steps hand it on, free of any web framework: the source it
came to (``ReceivingSource``), its body as it is read (``BodyCollector``), the write it
becomes once verified (``PendingWrite``), and the reply it gets (``ReceiverResponse``).
``Receiver`` (``inbox._receiving.receiver``) makes them; the shells and adapters pass them on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from inbox._providers import Provider, Verifier
from inbox._receiving.extract import Extraction

__all__ = [
    "BodyCollector",
    "PendingWrite",
    "ReceiverResponse",
    "ReceivingSource",
    "json_reply",
    "normalise_headers",
]


@dataclass(frozen=True, slots=True)
class ReceiverResponse:
    """What to answer, independent of the framework that sends it.

    ``outcome`` is the metrics label (accepted, duplicate, unauthorized, ...); ``reason`` the
    precise cause of a refusal (for logs and metrics only).
    """

    status: int
    body: bytes
    content_type: str
    outcome: str
    reason: str | None = None
    event_id: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


def json_reply(
    status: int,
    payload: Mapping[str, object],
    *,
    outcome: str,
    reason: str | None = None,
    event_id: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> ReceiverResponse:
    return ReceiverResponse(
        status=status,
        body=json.dumps(payload, separators=(",", ":")).encode(),
        content_type="application/json",
        outcome=outcome,
        reason=reason,
        event_id=event_id,
        headers=headers or {},
    )


@dataclass(frozen=True, slots=True)
class ReceivingSource:
    """A configured source, ready to receive: its verifier, extraction and body limit."""

    name: str
    verifier_name: str
    verifier: Verifier
    provider: Provider
    extraction: Extraction
    max_body_bytes: int
    on_dead: str | None = None
    """None for an unordered source; else what a dead letter does to its key."""
    secrets: Sequence[str] = field(default=(), repr=False)
    """For a handshake that answers with them (Zoom's HMAC of its token)."""
    verify_token: str | None = field(default=None, repr=False)
    """What a GET handshake expects (Meta's hub.verify_token); None when there is none."""
    options: Mapping[str, object] = field(default_factory=dict)
    """The source's options, for a GET handshake that answers as one (Braintree's
    public_key)."""


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A verified delivery, ready for ``InboxWriter.write(**pending.write_args())``."""

    source: ReceivingSource
    key: str
    event_type: str | None
    body: bytes
    headers: Mapping[str, str]
    ordering_key: str | None = None
    order_at: datetime | None = None

    def write_args(self) -> dict[str, Any]:
        """The keyword arguments of ``InboxWriter.write`` that store this delivery."""
        ordered = self.ordering_key is not None
        return {
            "ordering_key": self.ordering_key,
            "order_at": self.order_at,
            "on_dead": self.source.on_dead if ordered else None,
            "source": self.source.name,
            "key": self.key,
            "body": self.body,
            "headers": self.headers,
            "event_type": self.event_type,
            "verifier": self.source.verifier_name,
        }


class BodyCollector:
    """Accumulates a body's chunks and says stop as soon as it passes ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()

    def add(self, chunk: bytes) -> bool:
        """Append ``chunk``; False means the body is over the limit (stop reading)."""
        if len(self._buffer) + len(chunk) > self._limit:
            return False
        self._buffer += chunk
        return True

    @property
    def body(self) -> bytes:
        return bytes(self._buffer)


def normalise_headers(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Lower-case header names; repeated headers are joined with ", " (RFC 9110)."""
    headers: dict[str, str] = {}
    for name, value in pairs:
        lowered = name.lower()
        headers[lowered] = f"{headers[lowered]}, {value}" if lowered in headers else value
    return headers
