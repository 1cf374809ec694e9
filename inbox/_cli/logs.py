"""Logging set-up. Only the CLI calls this: a library never configures global logging."""

from __future__ import annotations

import logging
import sys

import structlog

from inbox._operations.term import use_colour

__all__ = ["configure_logging"]


def configure_logging(*, console: bool, level: int = logging.INFO) -> None:
    """Readable lines with ``console`` (for a person at a terminal), else JSON lines (for a
    log collector). Records below ``level`` are dropped."""
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer(colors=use_colour(sys.stderr))
        if console
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")
