"""The writer's logic, free of I/O: validation, statement parameters, result decoding, and
the coalescing of wake-up notifications. The sync and async writers are thin shells over it."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, LiteralString

from inbox._core.errors import InvalidWriteError
from inbox._core.sql import load_queries
from inbox._core.tracing import NO_TRACE_CONTEXT, TraceContext

__all__ = [
    "KnownPartitions",
    "NotifyCoalescer",
    "WriteRequest",
    "WriteResult",
    "group_params",
    "missing_partition",
    "owned_pool_options",
    "prepare_write",
    "read_result",
    "write_query",
]

MAX_SOURCE_LENGTH = 100
MAX_KEY_LENGTH = 255
MAX_EVENT_TYPE_LENGTH = 255
MAX_ORDERING_KEY_LENGTH = 255
ON_DEAD_CHOICES = ("hold", "continue")
# insert_event, then record_duplicate when a concurrent writer's row was invisible to the
# first statement; a row that vanished in between (pruned) earns one more round.
MAX_WRITE_ROUNDS = 3

QUERIES = load_queries("inbox.sql", "queries.sql")
INSERT_EVENT: LiteralString = QUERIES["insert_event"]
INSERT_EVENTS: LiteralString = QUERIES["insert_events"]
RECORD_DUPLICATE: LiteralString = QUERIES["record_duplicate"]
NOTIFY_WORK: LiteralString = QUERIES["notify_work"]
PARTITION_FOR: LiteralString = QUERIES["partition_for"]
PING: LiteralString = QUERIES["ping"]


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """A write as its caller asked for it, unchecked: ``InboxWriter.write``'s arguments.

    One value from the public method to the checks, so the arguments are named once here
    rather than again at every hop. Fields are ``object``: ``prepare_write`` accepts anything
    and refuses, with a typed error, what is not a valid write.
    """

    source: object
    key: object
    body: object
    headers: object = None
    event_type: object = None
    verifier: object = None
    ordering_key: object = None
    order_at: object = None
    on_dead: object = None
    received_at: object = None


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did: the event's id, and whether this call created it."""

    event_id: int
    is_new: bool


def _check_text(name: str, value: object, max_length: int, source: object, key: object) -> str:
    if not isinstance(value, str):
        raise InvalidWriteError(
            f"{name} must be a str, got {type(value).__name__}", source=source, key=key
        )
    if not value:
        raise InvalidWriteError(f"{name} must not be empty", source=source, key=key)
    if len(value) > max_length:
        raise InvalidWriteError(
            f"{name} is {len(value)} characters; the limit is {max_length}",
            source=source,
            key=key,
        )
    if "\x00" in value:
        raise InvalidWriteError(
            f"{name} contains a NUL character, which PostgreSQL text cannot hold",
            source=source,
            key=key,
        )
    return value


def _check_headers(headers: object, source: str, key: str) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise InvalidWriteError(
            f"headers must be a mapping of str to str, got {type(headers).__name__}",
            source=source,
            key=key,
        )
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidWriteError(
                f"headers must map str to str; {name!r} maps to {type(value).__name__}",
                source=source,
                key=key,
            )
        if "\x00" in name or "\x00" in value:
            raise InvalidWriteError(
                f"header {name!r} contains a NUL character", source=source, key=key
            )
        checked[name] = value
    return checked


def _check_ordering(
    ordering_key: object, order_at: object, on_dead: object, source: object, key: object
) -> tuple[str | None, datetime | None, str | None]:
    """The ordering of a write: (key, order timestamp, dead-letter policy), all None for
    an unordered event. An ordered event without ``on_dead`` holds its key when dead."""
    if ordering_key is None:
        for name, value in (("order_at", order_at), ("on_dead", on_dead)):
            if value is not None:
                raise InvalidWriteError(
                    f"{name} applies to ordered events only: pass ordering_key too",
                    source=source,
                    key=key,
                )
        return None, None, None
    checked_key = _check_text("ordering_key", ordering_key, MAX_ORDERING_KEY_LENGTH, source, key)
    checked_at = _check_aware(
        "order_at", order_at, "say, datetime.fromtimestamp(t, UTC)", source, key
    )
    policy = "hold" if on_dead is None else on_dead
    if policy not in ON_DEAD_CHOICES:
        raise InvalidWriteError(
            f"on_dead must be 'hold' or 'continue', got {on_dead!r}", source=source, key=key
        )
    return checked_key, checked_at, str(policy)


def _check_aware(
    name: str, value: object, hint: str, source: object, key: object
) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InvalidWriteError(
            f"{name} must be a timezone-aware datetime ({hint}), got {value!r}",
            source=source,
            key=key,
        )
    return value


def prepare_write(
    request: WriteRequest,
    *,
    notify_in_transaction: bool,
    trace_context: TraceContext = NO_TRACE_CONTEXT,
) -> dict[str, Any]:
    """Validate a write and return the parameters of ``insert_event``.

    Every check runs before any SQL, so a refused write touches nothing. An ordered write
    (``ordering_key``) is ordered by ``order_at``, else by its arrival (the log's
    ``received_at``: now, or the ``received_at`` an import gives). ``trace_context`` is
    the current span's ``(traceparent, tracestate)`` (``inbox._core.tracing``), stored for
    the handlers' links.
    """
    # Here, not at the top: psycopg loads with the first write, not with ``import inbox``.
    from psycopg.types.json import Jsonb

    source, key, body = request.source, request.key, request.body
    checked_source = _check_text("source", source, MAX_SOURCE_LENGTH, source, key)
    checked_key = _check_text("key", key, MAX_KEY_LENGTH, source, key)
    if not isinstance(body, bytes):
        raise InvalidWriteError(
            f"body must be bytes (the raw request body), got {type(body).__name__}",
            source=source,
            key=key,
        )
    event_type, verifier = request.event_type, request.verifier
    checked_type = (
        None
        if event_type is None
        else _check_text("event_type", event_type, MAX_EVENT_TYPE_LENGTH, source, key)
    )
    checked_verifier = (
        None if verifier is None else _check_text("verifier", verifier, 100, source, key)
    )
    checked_ordering, checked_order_at, policy = _check_ordering(
        request.ordering_key, request.order_at, request.on_dead, source, key
    )
    received_at = _check_aware(
        "received_at", request.received_at, "when the original inbox received it", source, key
    )
    return {
        "source": checked_source,
        "key": checked_key,
        "event_type": checked_type,
        "verifier": checked_verifier,
        "headers": Jsonb(_check_headers(request.headers, checked_source, checked_key)),
        "body": body,
        "body_sha256": hashlib.sha256(body).digest(),
        "traceparent": trace_context[0],
        "tracestate": trace_context[1],
        "notify": notify_in_transaction,
        "ordering_key": checked_ordering,
        "order_at": checked_order_at,
        "on_dead": policy,
        "received_at": received_at,
    }


def group_params(writes: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The parameters of ``insert_events`` for several prepared writes, in their order."""
    return {
        "sources": [w["source"] for w in writes],
        "keys": [w["key"] for w in writes],
        "event_types": [w["event_type"] for w in writes],
        "verifiers": [w["verifier"] for w in writes],
        "headers": [w["headers"] for w in writes],
        "bodies": [w["body"] for w in writes],
        "body_sha256s": [w["body_sha256"] for w in writes],
        "ordering_keys": [w["ordering_key"] for w in writes],
        "order_ats": [w["order_at"] for w in writes],
        "on_deads": [w["on_dead"] for w in writes],
        "traceparents": [w["traceparent"] for w in writes],
        "tracestates": [w["tracestate"] for w in writes],
        "received_ats": [w["received_at"] for w in writes],
    }


def first_row(rows: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """The first of a statement's rows, or None when it returned none."""
    return rows[0] if rows else None


def read_result(row: tuple[Any, ...] | None) -> WriteResult | None:
    """Decode a row of insert_event / record_duplicate; None means "run the next round"."""
    if row is None:
        return None
    return WriteResult(event_id=int(row[0]), is_new=bool(row[1]))


class NotifyCoalescer:
    """Decides when a writer sends its after-commit wake-up.

    At most one NOTIFY per ``interval`` seconds: the first commit after a quiet spell is
    announced at once (so an idle system wakes in milliseconds), commits inside the interval
    are covered by one trailing NOTIFY at its end (so the last write of a burst is never left
    to the fallback poll). Thread-safe; the caller owns the clock and the I/O.
    """

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last_sent = -math.inf
        self._trailing_due: float | None = None
        self._lock = threading.Lock()

    def after_commit(self, now: float) -> float | None:
        """Call after a new event committed. Returns 0.0 to notify now, a delay in seconds to
        schedule the trailing notify after, or None when one is already scheduled."""
        with self._lock:
            if self._trailing_due is not None:
                return None
            if now - self._last_sent >= self._interval:
                self._last_sent = now
                return 0.0
            self._trailing_due = self._last_sent + self._interval
            return self._trailing_due - now

    def take_trailing(self, now: float) -> bool:
        """Call when the trailing notify's timer fires, or when the writer closes. True
        exactly once per scheduled trailing notify: the caller then sends it. The slot is
        cleared *before* the send, so a commit that lands while it is being sent schedules
        a new one instead of being left uncovered."""
        with self._lock:
            if self._trailing_due is None:
                return False
            self._trailing_due = None
            self._last_sent = now
            return True


class KnownPartitions:
    """The receipt-time ranges a writer has been told the log has partitions for, so that
    an import (which names its receipt time) asks the database once per partition, not once
    per event. Forgotten when a write finds its partition gone (a prune dropped it).
    Thread-safe."""

    def __init__(self) -> None:
        self._ranges: list[tuple[datetime, datetime]] = []
        self._lock = threading.Lock()

    def covers(self, at: datetime) -> bool:
        with self._lock:
            return any(lo <= at < hi for lo, hi in self._ranges)

    def add(self, lo: datetime, hi: datetime) -> None:
        with self._lock:
            self._ranges.append((lo, hi))

    def forget(self) -> None:
        with self._lock:
            self._ranges.clear()


def missing_partition(exc: BaseException) -> bool:
    """Whether a write failed because no partition of the log holds its receipt time."""
    diag = getattr(exc, "diag", None)
    message = getattr(diag, "message_primary", None) or ""
    return getattr(exc, "sqlstate", None) == "23514" and message.startswith("no partition of")


def owned_pool_options(
    *,
    min_size: int,
    max_size: int,
    timeout_seconds: float,
    connection_kwargs: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Options of the pool a writer makes for itself: autocommit connections, so a new event
    is one statement and one round trip."""
    return {
        "min_size": min_size,
        "max_size": max_size,
        "timeout": timeout_seconds,
        "kwargs": {
            "application_name": "pg-inbox writer",
            **(connection_kwargs or {}),
            "autocommit": True,
        },
    }


def write_query(round_no: int) -> LiteralString:
    """The statement for a round of a write: insert first, then look up the winner's row."""
    return INSERT_EVENT if round_no % 2 == 0 else RECORD_DUPLICATE
