"""What the log and the work table hold of an event's ordering, however it was written."""

from __future__ import annotations

from typing import Any

from tests._wait import row


def ordering_of(url: str, event_id: int) -> tuple[Any, ...]:
    """The log row's ordering_key, order_at and on_dead; the work row's source, ordering_key,
    order_at and on_dead; and whether order_at is the receipt time (no time of the sender's)."""
    found = row(
        url,
        "select e.ordering_key, e.order_at, e.on_dead, w.source, w.ordering_key,"
        " w.order_at, w.on_dead, e.order_at = e.received_at"
        " from inbox_events e join inbox_work w on w.event_id = e.id where e.id = %s",
        [event_id],
    )
    assert found is not None, f"event {event_id} has no work row"
    return found
