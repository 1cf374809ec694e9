"""Resolving where the database is: the configured URL, else a running ``inbox dev``'s
embedded server, else (for ``inbox dev`` alone) a new embedded server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from inbox._core.config.settings import Settings
from inbox._core.errors import ConfigError
from inbox._core.logs import get_logger
from inbox._core.runtime.embedded import DataDirLock, EmbeddedPostgres, running_dev_server

__all__ = ["database_url", "where_settings_came_from"]

log = get_logger("inbox")


def where_settings_came_from(settings: Settings) -> str:
    """Which file was read, or which places were looked at: for messages about a missing
    setting."""
    if settings.config_file is not None:
        return f"read {settings.config_file}"
    return "no config file (looked for --config, $INBOX_CONFIG, ./inbox.toml)"


@contextmanager
def database_url(
    settings: Settings,
    *,
    say: Callable[[str], None],
    embedded: bool = False,
    lock: DataDirLock | None = None,
    part: str | None = None,
) -> Iterator[str]:
    """Yield the database's connection string.

    The configured URL wins; without one, the server of an ``inbox dev`` running on the same
    data directory is used, and ``say(line)`` tells the person at the terminal so (core
    never prints: the CLI that calls this decides where the line goes). Only with
    ``embedded=True`` (``inbox dev``) is an embedded server started, and stopped on exit:
    any other command would silently make a 40 MB cluster wherever it was run. A ``part``
    (receiver, worker, operator, retention) connects with its own ``[database] <part>_url``
    when it is set. ``lock``: the data directory's, when the caller holds it already.
    """
    own = getattr(settings.database, f"{part}_url", None) if part else None
    if own:
        yield own
        return
    if settings.database.url:
        yield settings.database.url
        return
    if not embedded:
        running = running_dev_server(settings.database.data_dir)
        if running is None:
            raise ConfigError(
                f"no database URL: {where_settings_came_from(settings)}, $INBOX_DATABASE_URL"
                f" is unset, and no `inbox dev` is running on {settings.database.data_dir}/;"
                " set [database] url in the config file (--config FILE) or"
                " INBOX_DATABASE_URL=postgresql://..., or start `inbox dev` in this folder"
            )
        # The CLI's own line, not a log event: it says which database this command talks to.
        say(
            f"inbox: using the database of the running `inbox dev` (pid {running.pid},"
            f" {running.state_file})"
        )
        yield running.url
        return
    server = EmbeddedPostgres(settings.database.data_dir, lock=lock, say=say)
    with server as url:
        log.info("embedded_postgres_started", data_dir=str(server.data_dir))
        yield url
