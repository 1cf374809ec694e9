"""pg-inbox, the processing side: route stored events to handlers that run in the claim's
transaction, so every business write commits exactly when its event is marked handled."""

from inbox._core.lazy import own_exports
from inbox.queries import ReplayResult, ReplayRun, replay, replay_runs, retry_dead
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
    "ReplayResult",
    "ReplayRun",
    "Retry",
    "Route",
    "Router",
    "Worker",
    "WorkerMetrics",
    "replay",
    "replay_runs",
    "retry_dead",
]

own_exports(globals())
