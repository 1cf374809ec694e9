"""pg-inbox, the processing side: route stored events to handlers that run in the claim's
transaction, so every business write commits exactly when its event is marked handled."""

from inbox.queries import ReplayResult, ReplayRun, replay, replay_runs, retry_dead
from processors._event import Event, Retry
from processors._metrics import WorkerMetrics
from processors._router import Route, Router
from processors._worker import Worker

__all__ = [
    "Event",
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
