"""argparse types that the commands of both sides use (``processors`` registers ``inbox
worker``, and may import only the core room)."""

from __future__ import annotations

import argparse

__all__ = ["MAX_BIGINT", "port", "positive_int"]

# Event ids, limits and counts end up as PostgreSQL bigint parameters.
MAX_BIGINT = 2**63 - 1


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > MAX_BIGINT:
        raise argparse.ArgumentTypeError(f"too large: {value} (at most {MAX_BIGINT})")
    return value


def port(text: str) -> int:
    """An argparse type: a TCP port (0 = any free one)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r} (0 to 65535)")
    return int(text)
