"""What the CLI writes on stderr: the logging set-up (only the CLI calls it: a library never
configures global logging), and the lines it says to the person at the terminal."""

from __future__ import annotations

import logging
import sys

import structlog

from inbox._operations.term import use_colour

__all__ = ["configure_logging", "say"]


def say(line: str) -> None:
    """A line for the person at the terminal, not a log event: on stderr, so that stdout
    stays the command's output (``--json``). Core functions that have something to tell
    (``database_url``) take this as their ``say``."""
    print(line, file=sys.stderr)


def configure_logging(*, console: bool, level: int = logging.INFO) -> None:
    """Readable lines with ``console`` (for a person at a terminal), else JSON lines (for a
    log collector), on stderr. inbox's and processors' records below ``level`` are dropped;
    other libraries' records below WARNING.

    structlog hands its events to the standard ``logging`` module (as it does in a host
    application, ``inbox._core.logs``); one stderr handler renders both its events and
    other libraries' records."""
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=use_colour(sys.stderr))
        if console
        else structlog.processors.JSONRenderer()
    )
    stamped: list[structlog.types.Processor] = [
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.contextvars.merge_contextvars,
            *stamped,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=stamped,
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    for ours in ("inbox", "processors"):
        logging.getLogger(ours).setLevel(level)
