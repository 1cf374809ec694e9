"""The one boundary where psycopg's errors become pg-inbox's.

psycopg is imported when a translation is first entered, not with this module: the writer
imports it, and ``import inbox`` must not load the driver (tests/test_import_cost.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from inbox._core.config.masking import mask_password
from inbox._core.database.pooler import pooler_hint
from inbox._core.errors import DatabaseUnavailableError, MigrationError

__all__ = ["translate_driver_errors"]

# SQLSTATE classes of a session that failed the client rather than of a statement refused:
# connection exceptions, invalid statement names (a prepared statement gone, as behind a
# pooler), insufficient resources, operator intervention (shutdown, statement timeout),
# system and internal errors.
_UNAVAILABLE_CLASSES = frozenset({"08", "26", "53", "57", "58", "XX"})


@contextmanager
def translate_driver_errors(action: str) -> Iterator[None]:
    """Re-raise connection-level failures as ``DatabaseUnavailableError``.

    So are errors of the session rather than of the statement (``_UNAVAILABLE_CLASSES``):
    a message names the error's class and, where a transaction pooler is the cause, the
    setting that fixes it. Errors that mean "the database answered no" (constraint
    violations, the append-only guard) stay psycopg errors: they are bugs or deliberate
    refusals, not outages. A missing inbox table or function is a ``MigrationError``: the
    fix is ``inbox db upgrade``.
    """
    import psycopg
    import psycopg_pool

    try:
        yield
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedFunction) as exc:
        raise MigrationError(
            f"{action}: the inbox schema is missing or older than this release"
            f" ({exc.diag.message_primary or exc}); run `inbox db upgrade`"
        ) from exc
    except psycopg.errors.SerializationFailure:
        # The database answered "try again" (a REPEATABLE READ snapshot went stale): the
        # caller decides, it is not an outage.
        raise
    except psycopg_pool.PoolTimeout as exc:
        raise DatabaseUnavailableError(
            f"{action}: no database connection available: {exc}"
        ) from exc
    except psycopg.Error as exc:
        hint = pooler_hint(exc)
        unavailable = (
            isinstance(exc, psycopg.OperationalError)
            or (exc.sqlstate or "")[:2] in _UNAVAILABLE_CLASSES
            or hint is not None  # a prepared statement another session made (42P05)
        )
        if not unavailable:
            raise
        raise DatabaseUnavailableError(
            f"{action}: database unavailable: {type(exc).__name__}:"
            f" {mask_password(str(exc).strip())}" + (f" ({hint})" if hint else "")
        ) from exc
