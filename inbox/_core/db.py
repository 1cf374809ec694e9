"""The one boundary where psycopg's errors become pg-inbox's.

psycopg is imported when a translation is first entered, not with this module: the writer
imports it, and ``import inbox`` must not load the driver (tests/test_import_cost.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from inbox._core.errors import DatabaseUnavailableError, MigrationError

__all__ = ["translate_driver_errors"]


@contextmanager
def translate_driver_errors(action: str) -> Iterator[None]:
    """Re-raise connection-level failures as ``DatabaseUnavailableError``.

    Errors that mean "the database answered no" (constraint violations, the append-only
    guard) stay psycopg errors: they are bugs or deliberate refusals, not outages. A missing
    inbox table is a ``MigrationError``: the fix is ``inbox db upgrade``.
    """
    import psycopg
    import psycopg_pool

    try:
        yield
    except psycopg.errors.UndefinedTable as exc:
        raise MigrationError(
            f"{action}: the inbox schema is missing ({exc.diag.message_primary or exc});"
            " run `inbox db upgrade`"
        ) from exc
    except psycopg.errors.SerializationFailure:
        # The database answered "try again" (a REPEATABLE READ snapshot went stale): the
        # caller decides, it is not an outage.
        raise
    except psycopg_pool.PoolTimeout as exc:
        raise DatabaseUnavailableError(
            f"{action}: no database connection available: {exc}"
        ) from exc
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailableError(f"{action}: database unavailable: {exc}") from exc
