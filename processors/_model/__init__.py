"""The model room: the processing side's vocabulary, free of I/O.

What a handler receives and how it asks for a retry (``event``), which handler runs for an
event (``router``), what a claim holds of an event (``claimed``), what becomes of an attempt
(``decide``: every decision, made without I/O), and the errors the processing side raises or
records (``errors``).

May import: ``inbox._core`` and ``processors._compat``, nothing else of ``processors``
(import-linter, pyproject.toml).
"""

__all__ = ["claimed", "decide", "errors", "event", "router"]
