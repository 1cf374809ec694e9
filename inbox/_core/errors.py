"""The errors pg-inbox raises.

Every error is an ``InboxError`` and carries the context that locates it::

    InboxError
    ├── ConfigError              a settings file or variable is invalid (path, field)
    ├── InvalidWriteError        a write was refused before any SQL ran (source, key)
    ├── DatabaseUnavailableError PostgreSQL could not be reached or dropped the connection
    ├── EmbeddedPostgresError    the embedded PostgreSQL could not be started
    ├── EventNotFoundError       no stored event has that id or source:key (ref)
    ├── MigrationError           the schema is missing or not at the expected revision
    ├── RefusedError             an operator action was refused before it changed anything
    │                            (a prune inside the minimum window, a replay without a reason)
    ├── ReplayNotFoundError      no replay run has that id (replay_id)
    ├── VerificationError        a webhook's signature or timestamp did not verify (reason)
    └── processors.ProcessingError     an event's attempt failed for a reason of the
        │                              worker's, not the handler's own exception
        ├── HandlerTimeoutError        the handler ran past handler_timeout_seconds
        ├── HandlerLeftTransactionAbortedError
        │                              the handler returned after one of its statements
        │                              failed: the transaction is aborted, nothing commits
        ├── NoRouteError               no handler is routed (with unrouted = "fail")
        └── CommitOutcomeUnknownError  the connection broke during a batch's COMMIT
                                       (event_ids); the worker checks what committed

The ``processors`` side defines its branch (``ProcessingError`` in ``processors._model.errors``,
each subclass where it is raised; all exported from ``processors``); ``inbox`` never imports
it. The worker records a processing error as the
attempt's ``error_class``; the handler's own exceptions are recorded as they are, and
``processors.Retry`` is a request, not an error. Driver (psycopg) errors are translated into
these at one boundary, ``inbox._core.database.db``.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DatabaseUnavailableError",
    "EmbeddedPostgresError",
    "EventNotFoundError",
    "InboxError",
    "InvalidWriteError",
    "MigrationError",
    "RefusedError",
    "ReplayNotFoundError",
    "VerificationError",
]


class InboxError(Exception):
    """The root of every error pg-inbox raises."""


class ConfigError(InboxError):
    """A configuration file or environment variable is invalid."""

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None) -> None:
        self.path = path
        self.field = field
        super().__init__(message)


class InvalidWriteError(InboxError, ValueError):
    """A write was refused before it reached the database; nothing was stored."""

    def __init__(self, message: str, *, source: object = None, key: object = None) -> None:
        self.source = source
        self.key = key
        super().__init__(message)


class DatabaseUnavailableError(InboxError):
    """PostgreSQL could not be reached, or the connection broke mid-operation.

    When raised from a write, the write did not commit (or its outcome is unknown and the
    caller must treat it as not acknowledged: the provider will deliver again, and the unique
    key absorbs the repeat).
    """


class EmbeddedPostgresError(InboxError):
    """The embedded PostgreSQL server could not be started or reached."""


class EventNotFoundError(InboxError, LookupError):
    """No stored event matches ``ref`` (an id, or ``SOURCE:KEY``). Pruned events are gone."""

    def __init__(self, message: str, *, ref: object = None) -> None:
        self.ref = ref
        super().__init__(message)


class ReplayNotFoundError(InboxError, LookupError):
    """No replay run (or dead-letter retry) has this id."""

    def __init__(self, message: str, *, replay_id: int) -> None:
        self.replay_id = replay_id
        super().__init__(message)


class RefusedError(InboxError):
    """An operator action (prune, replay) was refused; nothing was changed. The message says
    which rule refused it and how to proceed."""

    def __init__(self, message: str, *, action: str) -> None:
        self.action = action
        super().__init__(message)


class MigrationError(InboxError):
    """The database schema is missing or not at the revision this code expects."""


class VerificationError(InboxError):
    """A webhook failed verification. ``reason`` is for logs and metrics, never for the caller."""

    def __init__(self, reason: str, *, source: str | None = None) -> None:
        self.reason = reason
        self.source = source
        super().__init__(reason)
