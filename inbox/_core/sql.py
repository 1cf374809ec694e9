"""Named SQL queries, kept together in ``.sql`` files and loaded once.

A file holds blocks introduced by ``-- name: <query_name>``; parameters are psycopg's
named placeholders (``%(name)s``). Identifiers are never interpolated from values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import LiteralString

__all__ = ["NOTIFY_CHANNEL", "load_queries"]

# The one LISTEN/NOTIFY channel: a constant, never built from input.
NOTIFY_CHANNEL = "inbox_work"

_NAME_LINE = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@cache
def load_queries(package: str, filename: str) -> Mapping[str, LiteralString]:
    """Parse ``filename`` in ``package`` into ``{name: sql}``; each name must be unique."""
    text = resources.files(package).joinpath(filename).read_text(encoding="utf-8")
    parts = _NAME_LINE.split(text)
    queries: dict[str, LiteralString] = {}
    # parts = [preamble, name1, body1, name2, body2, ...]
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"{package}/{filename}: query {name!r} is defined twice")
        # Comment lines go: psycopg would read a placeholder written in a comment as a
        # parameter. The text comes from a file shipped with the package, not from input:
        # it is as trusted as a literal in the source.
        sql: LiteralString = "\n".join(
            line for line in body.splitlines() if not line.lstrip().startswith("--")
        ).strip()
        queries[name] = sql
    return queries
