"""The running room: a claimed batch's handlers, run inside the claim transaction.

The batch runner (``batch``) runs each handler (``invoke``) in the savepoints of
``savepoints``, within its time limit (``deadline``); a batch's async handlers share a
pipeline (``pipeline``), whose statements ``pipeline_send`` sends together. Each run is a
span (``tracing``), and its outcome a log line (``settled_log``). It returns decisions:
nothing here writes an outcome or commits.

May import: the model room, ``processors._compat`` and ``inbox._core``; never the claiming
room, whose store writes what running decides (import-linter, pyproject.toml).
"""

__all__ = [
    "batch",
    "deadline",
    "invoke",
    "pipeline",
    "pipeline_send",
    "savepoints",
    "settled_log",
    "tracing",
]
