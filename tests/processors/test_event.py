"""``stored_event`` (the claim's unvalidated fast path) builds what validation would."""

from __future__ import annotations

from datetime import UTC, datetime

import pydantic
import pytest

from processors import Event
from processors._model.event import stored_event

RECEIVED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("replay_id", [None, 7])
def test_a_stored_event_equals_the_validated_event(replay_id: int | None) -> None:
    values = {
        "id": 42,
        "source": "stripe",
        "key": "evt_1",
        "type": "charge.succeeded",
        "received_at": RECEIVED,
        "headers": {"stripe-signature": "t=1,v1=ab"},
        "body": b'{"id": "evt_1"}',
        "attempt": 2,
        "replay_id": replay_id,
    }
    fast = stored_event(**values)  # type: ignore[arg-type]
    validated = Event(**values, is_replay=replay_id is not None, is_rehearsal=False)  # type: ignore[arg-type]

    assert fast == validated
    assert fast.model_dump() == validated.model_dump()
    assert fast.model_fields_set == validated.model_fields_set
    assert repr(fast) == repr(validated)
    assert fast.is_replay is (replay_id is not None)
    assert fast.json() == {"id": "evt_1"}
    assert fast.model_copy(update={"attempt": 3}).attempt == 3


def test_a_stored_event_is_frozen_like_any_event() -> None:
    event = stored_event(
        id=1,
        source="s",
        key="k",
        type=None,
        received_at=RECEIVED,
        headers={},
        body=b"",
        attempt=1,
        replay_id=None,
    )
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        event.attempt = 2  # type: ignore[misc]
