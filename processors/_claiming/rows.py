"""A claim's rows as the worker holds them: read through a binary cursor whose JSON is parsed
by a scanner made for jsonb's text, and turned into ``ClaimedEvent``s.

The jsonb loader is one of the hooks of ``processors._compat``: without it, a claim's cursor
keeps psycopg's own loader.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from psycopg.types.json import JsonbBinaryLoader

from processors._compat import hooks
from processors._model.claimed import Claimed, ClaimedEvent
from processors._model.event import stored_event

__all__ = ["claim_cursor", "claimed_event"]

_JSON = json.JSONDecoder()


def _load_json(data: str | bytes) -> Any:
    """A claimed row's JSON (its headers): jsonb's text never has whitespace around it, so
    the scanner takes it as it comes, without json.loads' detection of the bytes' encoding
    and its two whitespace matches, on every claimed event's path."""
    return _JSON.raw_decode(data if isinstance(data, str) else data.decode())[0]


class _ClaimJsonbLoader(JsonbBinaryLoader):
    """psycopg's binary jsonb loader, parsing with ``_load_json`` (the way psycopg's
    ``set_json_loads`` makes its own, for the one format and type a claim reads)."""

    _loads = staticmethod(_load_json)


def claim_cursor(conn: psycopg.AsyncConnection[Any]) -> psycopg.AsyncCursor[tuple[Any, ...]]:
    """A cursor for claimed rows: binary (the body's bytes and the timestamps come as they are
    stored, not as text to parse), its JSON read by ``_load_json``. The handler's own
    statements on the connection keep psycopg's defaults."""
    cursor = conn.cursor(row_factory=tuple_row, binary=True)
    if hooks().jsonb_loader:
        cursor.adapters.register_loader("jsonb", _ClaimJsonbLoader)
    return cursor


def claimed_event(row: tuple[Any, ...]) -> ClaimedEvent:
    """One row of a claim (claim_batch, claim_suspect) as the worker holds it."""
    (
        event_id,
        attempts,
        replay_id,
        crashes,
        source,
        key,
        event_type,
        received_at,
        headers,
        body,
        ordering_key,
        traceparent,
        tracestate,
        *_,  # claim_batch's index position of the row
    ) = row
    claimed = Claimed(event_id=event_id, attempts=attempts, crashes=crashes, replay_id=replay_id)
    # The row comes from our own schema: no need to validate what the database typed.
    event = stored_event(
        id=event_id,
        source=source,
        key=key,
        type=event_type,
        received_at=received_at,
        headers=headers,
        body=body,
        attempt=attempts + 1,
        replay_id=replay_id,
    )
    return ClaimedEvent(
        claimed=claimed,
        event=event,
        ordering_key=ordering_key,
        traceparent=traceparent,
        tracestate=tracestate,
    )
