"""Where the writers (``inbox._writing``) import their pools' care from; it lives in
``inbox._core.database.pool_care``, which every other room imports (import-linter holds
that). This module goes once the writers import the database room too."""

from inbox._core.database.pool_care import AsyncPoolCare, PoolCare

__all__ = ["AsyncPoolCare", "PoolCare"]
