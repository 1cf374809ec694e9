"""A rehearsal's audit record, and the console's requests for one. The rehearsal itself
runs handlers, so it lives on the processing side (``processors``); this side selects its
events, records that it ran, and queues a request that a worker with the handlers runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inbox._core.errors import ReplayNotFoundError
from inbox._operations.records import Via, check_via
from inbox._operations.replay_store import ReplayStore
from inbox._operations.selection import EventFilter
from inbox._operations.session import Db, connection, current_actor

__all__ = [
    "NO_REASON",
    "RehearsalRequest",
    "record_rehearsal",
    "rehearsal_request",
    "rehearsal_workers",
    "request_rehearsal",
]

# The audit's reason column is required for every kind; a rehearsal changes nothing, so
# asking for one would only invite filler.
NO_REASON = "(no reason given)"


def record_rehearsal(
    db: Db,
    *,
    selection: EventFilter,
    selected: int,
    outcome: Mapping[str, int],
    reason: str | None = None,
    actor: str | None = None,
    via: Via = "api",
) -> int:
    """Append a rehearsal's one audit row (kind ``rehearsal``): who, why, the selection,
    how many events it ran and their counts by outcome. Its id."""
    check_via(via)
    with connection(db, "record a rehearsal") as conn, conn.transaction():
        return ReplayStore(conn).record_rehearsal(
            created_by=actor or current_actor(),
            reason=(reason or "").strip() or NO_REASON,
            selection=selection.to_json(),
            selected=selected,
            outcome=dict(outcome),
            via=via,
        )


@dataclass(frozen=True, slots=True)
class RehearsalRequest:
    """A rehearsal asked for (in the console) and run by a worker, as it stands."""

    id: int
    """Its audit row's."""
    created_at: datetime
    created_by: str
    reason: str
    via: str
    event_ids: list[int]
    sources: list[str]
    form: dict[str, Any]
    """The selection as the page that asked had it."""
    state: str
    """queued, running, done, failed (the rehearsal could not run), or expired."""
    deadline: datetime
    worker: str | None
    started_at: datetime | None
    finished_at: datetime | None
    done: int
    """Events rehearsed so far."""
    report: dict[str, Any] | None
    """``Rehearsal.to_json()``, once done."""
    error: str | None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed", "expired")


def request_rehearsal(
    db: Db,
    *,
    selection: EventFilter,
    event_ids: Sequence[int],
    form: Mapping[str, Any],
    timeout_seconds: float,
    reason: str | None = None,
    actor: str | None = None,
    via: Via = "api",
) -> int:
    """Queue a rehearsal of ``event_ids`` for a worker whose router handles their sources,
    due within ``timeout_seconds``, with its one audit row (kind ``rehearsal``): its id."""
    check_via(via)
    with connection(db, "request a rehearsal") as conn, conn.transaction():
        return ReplayStore(conn).request_rehearsal(
            created_by=actor or current_actor(),
            reason=(reason or "").strip() or NO_REASON,
            selection={**selection.to_json(), "ids": list(event_ids)},
            event_ids=event_ids,
            form=dict(form),
            timeout_seconds=timeout_seconds,
            via=via,
        )


def rehearsal_request(db: Db, request_id: int) -> RehearsalRequest:
    """A requested rehearsal; ``ReplayNotFoundError`` when there is none of that id."""
    with connection(db, "read a rehearsal") as conn:
        row = ReplayStore(conn).rehearsal_request(request_id)
    if row is None:
        raise ReplayNotFoundError(f"no rehearsal request {request_id}", replay_id=request_id)
    row["id"] = row.pop("replay_id")
    return RehearsalRequest(**row)


def rehearsal_workers(db: Db, event_ids: Sequence[int]) -> tuple[list[str], int]:
    """The sources of ``event_ids``, and how many running worker processes handle them."""
    with connection(db, "count the workers") as conn:
        return ReplayStore(conn).rehearsal_workers(event_ids)
