"""The core room: what every other room, and ``processors``, share.

Owns settings (``settings``, composed of the sections' models in ``sections``) and the
key/type spec grammar they validate (``specs``); database
connections and their care (``db``, ``pool_care``, ``outage``, ``pooler``); the named-SQL loader
(``sql``); the embedded PostgreSQL (``embedded``) and the database URL a command runs against
(``runtime``); the error tree (``errors``); the migrations runner (``migrate``); optional
extras (``extras``); lazy loading (``lazy``); the argparse number types both sides' commands
use (``arguments``); what the daemons tell systemd (``systemd``).

May import: nothing of ``inbox`` outside this room. It is the only internal code that
``processors`` may import (import-linter holds both rules, pyproject.toml).
"""

__all__ = [
    "arguments",
    "db",
    "embedded",
    "errors",
    "extras",
    "lazy",
    "migrate",
    "outage",
    "pool_care",
    "pooler",
    "runtime",
    "sections",
    "settings",
    "specs",
    "sql",
    "systemd",
]
