"""Where the writers (``inbox._writing``) import the pooler's names from; they live in
``inbox._core.database.pooler``, which every other room imports (import-linter holds that).
This module goes once the writers import the database room too."""

from inbox._core.database.pooler import (
    PoolerMode,
    behind_pooler,
    connect_kwargs,
    settings_statement,
    startup_options,
)

__all__ = [
    "PoolerMode",
    "behind_pooler",
    "connect_kwargs",
    "settings_statement",
    "startup_options",
]
