"""A rehearsal's audit record. The rehearsal itself runs handlers, so it lives on the
processing side (``processors``); this side selects its events and records that it ran.
"""

from __future__ import annotations

from collections.abc import Mapping

from inbox._operations.records import Via, check_via
from inbox._operations.replay_store import ReplayStore
from inbox._operations.selection import EventFilter
from inbox._operations.session import Db, connection, current_actor

__all__ = ["NO_REASON", "record_rehearsal"]

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
