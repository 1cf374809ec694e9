"""Resolving where the database is: the configured URL, else the embedded server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import structlog

from inbox._embedded import EmbeddedPostgres
from inbox._settings import Settings

__all__ = ["database_url"]

log = structlog.get_logger("inbox")


@contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """Yield the database's connection string, starting the embedded server when no URL is
    configured (and stopping it on exit)."""
    if settings.database.url:
        yield settings.database.url
        return
    embedded = EmbeddedPostgres(settings.database.data_dir)
    with embedded as url:
        log.info("embedded_postgres_started", data_dir=str(embedded.data_dir))
        yield url
