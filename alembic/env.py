"""Alembic environment: migrations are raw SQL run through a SQLAlchemy connection.

The URL comes from the Alembic config (``sqlalchemy.url``), set by ``inbox db`` from the
pg-inbox settings; a plain ``alembic`` call can pass ``-x url=postgresql://...``.
"""

from __future__ import annotations

import psycopg
from sqlalchemy import create_engine, pool

from alembic import context

config = context.config


def _conninfo() -> str:
    conninfo = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not conninfo:
        raise RuntimeError("no database URL: pass -x url=postgresql://... or use `inbox db`")
    return conninfo


def run_migrations_online() -> None:
    conninfo = _conninfo()
    # psycopg opens the connection itself, so any libpq connection string works (a URL or
    # "host=... dbname=..."); SQLAlchemy only carries it to alembic.
    engine = create_engine(
        "postgresql+psycopg://",
        creator=lambda: psycopg.connect(conninfo),
        poolclass=pool.NullPool,
    )
    with engine.connect() as connection:
        context.configure(connection=connection, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    # Offline mode prints the SQL; the migrations are raw SQL, so it is their text.
    context.configure(url="postgresql+psycopg://", literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
