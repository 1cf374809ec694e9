"""The worker room: a worker process, which orchestrates claim → run → settle → commit.

``worker``'s claim loops, each on the connections of a ``session``, take a batch from the
claiming room, hand it to the running room and give the decisions back to the store; the
listener wakes them (``listener``); beside them the process keeps the log's partitions ahead
and says that it runs (``upkeep``). What the process tells the outside: its health
(``health``, read by the probes of ``probes`` and the systemd watchdog), its metrics
(``metrics``, with the queue's gauges of ``queue_gauges``) and the version of the code it runs
(``version``).

May import: the claiming, running and model rooms, ``processors._compat`` and ``inbox._core``
(import-linter, pyproject.toml).
"""

__all__ = [
    "health",
    "listener",
    "metrics",
    "probes",
    "queue_gauges",
    "session",
    "upkeep",
    "version",
    "worker",
]
