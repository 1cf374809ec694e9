"""What a handler receives, and how it asks for a later retry."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["Event", "Retry"]


class Event(BaseModel):
    """One stored webhook, as a handler sees it. Immutable."""

    model_config = ConfigDict(frozen=True)

    id: int
    source: str
    key: str
    type: str | None
    received_at: datetime
    headers: dict[str, str]
    body: bytes
    attempt: int
    """1 for the first attempt; failed attempts so far + 1."""
    is_replay: bool = False
    replay_id: int | None = None

    def json(self) -> Any:  # type: ignore[override]  # pydantic's deprecated .json() is not ours
        """The body parsed as JSON (raises ``ValueError`` when it is not JSON)."""
        return json.loads(self.body)


class Retry(Exception):
    """Raise from a handler to run the event again after ``after`` seconds.

    Not a failure: the attempt count does not grow and the event is never dead-lettered for it.
    """

    def __init__(self, after: float = 0.0, reason: str = "") -> None:
        if after < 0:
            raise ValueError("Retry(after=...) must be zero or more seconds")
        self.after = float(after)
        self.reason = reason
        super().__init__(reason or f"retry after {after:g} s")
