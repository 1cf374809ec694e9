"""The worker room: a worker process, which orchestrates claim → run → settle → commit.

``worker``'s claim loops take a batch from the claiming room, hand it to the running room and
give the decisions back to the store; beside them the listener wakes them (``listener``). What
the process tells the outside: its health (``health``, read by the probes of ``probes`` and
the systemd watchdog), its metrics (``metrics``, with the queue's gauges of
``queue_gauges``) and the version of the code it runs (``version``).

May import: the claiming, running and model rooms, ``processors._compat`` and ``inbox._core``
(import-linter, pyproject.toml).
"""

__all__ = ["health", "listener", "metrics", "probes", "queue_gauges", "version", "worker"]
