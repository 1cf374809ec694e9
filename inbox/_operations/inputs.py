"""The operator's input forms, checked before any query: durations (``90d``), times (ISO 8601
or a duration ago), and a page's size.

The CLI's options, the console's form fields and the API's arguments all arrive as these:
one parser each, so ``--since 2h`` and the console's "since: 2h" mean the same.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

__all__ = ["MAX_PAGE", "check_limit", "parse_duration", "parse_time"]

MAX_PAGE = 1000
"""The largest page ``events``, ``dead``, ``search`` and ``audit`` return."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)?\s*$")
_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400, None: 1}


def parse_duration(text: str) -> timedelta:
    """``90d``, ``12h``, ``30m``, ``45s``, ``2w`` (a bare number is seconds)."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (try 90d, 12h, 30m, 45s or 2w)")
    try:
        return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
    except OverflowError:
        raise ValueError(f"too long a duration: {text!r} (at most 999999999d)") from None


def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO 8601 time (UTC when it has no offset), or a duration meaning that long ago."""
    if _DURATION.match(text):
        ago = parse_duration(text)
        try:
            return (now or datetime.now(UTC)) - ago
        except OverflowError:
            raise ValueError(f"{text!r} ago is before the year 1") from None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a time: {text!r} (ISO 8601, or a duration ago like 2h)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def check_limit(limit: int) -> None:
    """A page's size: from 1 to ``MAX_PAGE``."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
