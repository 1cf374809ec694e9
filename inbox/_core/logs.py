"""The loggers of every room: structlog when someone configured it, else the standard
``logging`` module, so a host application's logging settings decide levels and handlers.

A library is a guest: it never configures logging and never prints. Unconfigured structlog
would print every event on stdout, so until someone calls ``structlog.configure`` (the CLI
does, in ``inbox._cli.logs``; a host may; ``structlog.testing.capture_logs`` does) an event
goes to ``logging.getLogger(name)`` as a plain record: the message is ``event key=value ...``
and the event's fields ride along as the record's ``inbox_event`` attribute. Nothing is
shown unless the host's logging shows it (Python's last-resort handler prints only warnings
and errors, on stderr).

structlog itself is imported on the first event, not when a writer is imported: importing it
loads its development renderer (and ``rich`` where installed), which an app that embeds only
``InboxWriter`` should not pay for.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["GuestLogger", "get_logger"]


def _to_logging(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """structlog's last processor on the unconfigured path: the keyword arguments of one
    ``logging.Logger`` call."""
    exc_info = event_dict.pop("exc_info", None)
    event = event_dict.pop("event", "")
    fields = " ".join(f"{key}={value!r}" for key, value in event_dict.items())
    message = f"{event} {fields}" if fields else str(event)
    return {"msg": message, "exc_info": exc_info, "extra": {"inbox_event": dict(event_dict)}}


class GuestLogger:
    """A logger that asks at each event who renders it (see the module's docstring)."""

    __slots__ = ("_context", "_name", "_stdlib")

    def __init__(self, name: str, context: Mapping[str, Any] | None = None) -> None:
        self._name = name
        self._context = dict(context or {})
        self._stdlib = logging.getLogger(name)

    def bind(self, **values: Any) -> GuestLogger:
        return GuestLogger(self._name, {**self._context, **values})

    def _emit(self, method: str, level: int, event: str, values: dict[str, Any]) -> None:
        import structlog

        if structlog.is_configured():
            processors = structlog.get_config()["processors"]
            if (
                processors
                and processors[0] is structlog.stdlib.filter_by_level
                and not self._stdlib.isEnabledFor(level)
            ):
                # What that first processor would decide, before building the event: the
                # receiver drops a debug event per delivery, and building each one showed.
                return
            bound = structlog.get_logger(self._name).bind(**self._context)
        else:
            logger = self._stdlib
            if not logger.isEnabledFor(level):
                return  # the common case in a host: cheap, nothing built
            bound = structlog.wrap_logger(
                logger, processors=[_to_logging], wrapper_class=structlog.stdlib.BoundLogger
            ).bind(**self._context)
        getattr(bound, method)(event, **values)

    def debug(self, event: str, **values: Any) -> None:
        self._emit("debug", logging.DEBUG, event, values)

    def info(self, event: str, **values: Any) -> None:
        self._emit("info", logging.INFO, event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._emit("warning", logging.WARNING, event, values)

    def error(self, event: str, **values: Any) -> None:
        self._emit("error", logging.ERROR, event, values)

    def exception(self, event: str, **values: Any) -> None:
        self._emit("exception", logging.ERROR, event, values)


def get_logger(name: str) -> GuestLogger:
    """The logger of ``name`` (``inbox.writer``, ``processors.worker``...)."""
    return GuestLogger(name)
