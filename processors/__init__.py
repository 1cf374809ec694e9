"""pg-inbox, the processing side: route stored events to handlers that run in the claim's
transaction, so every business write commits exactly when its event is marked handled."""

from inbox._core.lazy import own_exports
from inbox.queries import ReplayResult, ReplayRun, replay, replay_runs, retry_dead
from processors._decide import (
    HandlerLeftTransactionAbortedError,
    HandlerTimeoutError,
    NoRouteError,
)
from processors._errors import ProcessingError
from processors._event import Event, Retry
from processors._metrics import WorkerMetrics
from processors._router import Route, Router
from processors._worker import CommitOutcomeUnknownError, Worker

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
