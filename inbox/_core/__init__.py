"""The core room: what every other room, and ``processors``, share.

Owns settings (``settings``), database connections and their care (``db``, ``pool_care``,
``outage``), the named-SQL loader (``sql``), the embedded PostgreSQL (``embedded``), the
database URL a command runs against (``runtime``), the error tree (``errors``), the migrations
runner (``migrate``), optional extras (``extras``) and lazy loading (``lazy``).

May import: nothing of ``inbox`` outside this room. It is the only internal code that
``processors`` may import (import-linter holds both rules, pyproject.toml).
"""

__all__ = [
    "db",
    "embedded",
    "errors",
    "extras",
    "lazy",
    "migrate",
    "outage",
    "pool_care",
    "runtime",
    "settings",
    "sql",
]
