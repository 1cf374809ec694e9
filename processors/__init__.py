"""pg-inbox, the processing side: route stored events to handlers that run in the claim's
transaction, so every business write commits exactly when its event is marked handled.

Replays and dead-letter retries are the operator API's: ``inbox.queries.replay``,
``retry_dead`` and ``replay_runs``.
"""

from typing import Any

from inbox._core.config.settings import WorkerSettings
from inbox._core.lazy import load_lazily, own_exports
from processors._model.errors import (
    CommitOutcomeUnknownError,
    HandlerLeftTransactionAbortedError,
    HandlerTimeoutError,
    NoRouteError,
    ProcessingError,
)
from processors._model.event import Event, Retry
from processors._model.router import Route, Router
from processors._worker.metrics import WorkerMetrics
from processors._worker.worker import Worker

__all__ = [
    "CommitOutcomeUnknownError",
    "Event",
    "HandlerLeftTransactionAbortedError",
    "HandlerTimeoutError",
    "NoRouteError",
    "ProcessingError",
    "Retry",
    "Route",
    "Router",
    "Worker",
    "WorkerMetrics",
    "WorkerSettings",
]

# Where code written before the operator API had them still finds them; they are
# inbox.queries' names, exported there (loaded on first use, and not claimed as ours).
_ALIASES = {
    "ReplayResult": "inbox.queries",
    "ReplayRun": "inbox.queries",
    "replay": "inbox.queries",
    "replay_runs": "inbox.queries",
    "retry_dead": "inbox.queries",
}


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _ALIASES, name)


own_exports(globals())
