"""Schema migrations: alembic is the only way the schema is created or changed."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy.exc
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError

from alembic import command
from inbox._core.config.masking import mask_password
from inbox._core.config.sections import RetentionSettings
from inbox._core.database.db import translate_driver_errors
from inbox._core.errors import DatabaseUnavailableError, MigrationError
from inbox._core.sql import load_queries

__all__ = ["current_revision", "downgrade", "head_revision", "upgrade"]


def _script_location() -> Path:
    # An installed wheel carries the migrations inside the package (see pyproject's
    # force-include); a source checkout has them at the top level.
    package = Path(__file__).resolve().parents[2]  # inbox/, above the core's database room
    for candidate in (package / "_alembic", package.parent / "alembic"):
        if (candidate / "env.py").exists():
            return candidate
    raise FileNotFoundError("pg-inbox migrations not found next to the inbox package")


def _config(url: str, stdout: io.StringIO | None = None) -> Config:
    cfg = Config(stdout=stdout) if stdout is not None else Config()
    cfg.set_main_option("script_location", str(_script_location()))
    # alembic's config is ConfigParser-based: a '%' in a password must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


@contextmanager
def _translated(action: str) -> Iterator[None]:
    """alembic's and SQLAlchemy's errors, as pg-inbox's (psycopg's: ``inbox._core.database.db``)."""
    try:
        with translate_driver_errors(action):
            yield
    except CommandError as exc:  # an unknown revision, mostly
        raise MigrationError(f"{action}: {exc} (`inbox db current` shows where it is)") from exc
    except sqlalchemy.exc.OperationalError as exc:
        raise DatabaseUnavailableError(
            f"{action}: database unavailable: {mask_password(str(exc.orig))}"
        ) from exc


def upgrade(url: str, revision: str = "head", retention: RetentionSettings | None = None) -> None:
    """Migrate to ``revision``; at the head, also hand the database ``retention`` (the
    partition period and the minimum it enforces; None: leave what it has) and make sure
    of the log's partitions ahead."""
    with _translated(f"upgrading the schema to {revision}"):
        command.upgrade(_config(url), revision)
    if revision == "head":
        _keep(url, retention)


def _keep(url: str, retention: RetentionSettings | None) -> None:
    import psycopg

    queries = load_queries("inbox.sql", "retention.sql")
    with (
        translate_driver_errors("setting how the log is kept"),
        psycopg.connect(url, autocommit=True) as conn,
    ):
        if retention is not None:
            conn.execute(
                queries["set_retention"],
                {
                    "partition": retention.partition,
                    "minimum_days": retention.minimum_days,
                    "keys_days": retention.keys_days,
                },
            )
        conn.execute(queries["ensure_partitions"])


def downgrade(url: str, revision: str) -> None:
    with _translated(f"downgrading the schema to {revision}"):
        command.downgrade(_config(url), revision)


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config("postgresql://unused")).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


def current_revision(url: str) -> str | None:
    """The revision the database is at, or None for a database never migrated."""
    import psycopg

    with (
        translate_driver_errors("reading the schema revision"),
        psycopg.connect(url, autocommit=True) as conn,
    ):
        exists = conn.execute("select to_regclass('alembic_version') is not null").fetchone()
        if not exists or not exists[0]:
            return None
        row = conn.execute("select version_num from alembic_version").fetchone()
        return None if row is None else str(row[0])
