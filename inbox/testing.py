"""Helpers for your own tests of a pg-inbox project (``inbox init`` writes one that uses them).

    from inbox.testing import deliver, fresh_database, settings_for_tests, signed_request

    with fresh_database(tables=["schema"]) as url:        # migrated, plus your own tables
        settings = settings_for_tests("inbox.toml", database_url=url)
        reply = deliver(settings, signed_request(settings, "stripe"))
        assert reply.status == 200

Running your Router over the events is the processing side's: ``processors.testing``.

The database: ``fresh_database(server)`` makes a new database on ``server`` (a connection
string to any database there, e.g. ``postgres``; default ``$INBOX_TEST_DATABASE_URL``), or,
with neither, on an embedded PostgreSQL in a temporary folder (``pg-inbox[embedded]``), and
drops it (and stops that server) afterwards.

Many tests, one migration: migrate a template once per session and clone it per test (a
copy costs far less than a migration; pg-inbox's own suite does this):

    @pytest.fixture(scope="session")
    def template(server):                  # server: postgres_server(), session-scoped
        with migrated_template(server, tables=["schema"]) as name:
            yield name

    @pytest.fixture
    def db_url(server, template):
        with new_database(server, template=template) as url:
            yield url

``new_database`` without a template is an empty database; ``create_database`` and
``drop_database`` are the same steps for a database whose life is not one block.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from inbox._core.config.settings import Settings, load_settings
from inbox._receiving.delivery import ReceiverResponse

__all__ = [
    "SignedRequest",
    "create_database",
    "deliver",
    "drop_database",
    "fresh_database",
    "migrated_template",
    "new_database",
    "postgres_server",
    "settings_for_tests",
    "signed_request",
]

TEST_DATABASE_VARIABLE = "INBOX_TEST_DATABASE_URL"

# A clone waits this long for the template's last sessions to end (see create_database).
_TEMPLATE_IDLE_SECONDS = 30.0


@contextmanager
def postgres_server(server: str | None = None) -> Iterator[str]:
    """Yield a connection string to a maintenance database (e.g. ``postgres``) of a
    PostgreSQL to make test databases on: ``server``, else ``$INBOX_TEST_DATABASE_URL``,
    else an embedded PostgreSQL in a temporary folder (``pg-inbox[embedded]``), stopped
    and removed on exit."""
    server = server or os.environ.get(TEST_DATABASE_VARIABLE)
    if server:
        yield server
        return
    from inbox._core.runtime.embedded import EmbeddedPostgres

    # Not under pytest's tmp_path: on a root machine the server runs as another user, which
    # must traverse the path (pytest keeps its base folder 0700).
    folder = Path(tempfile.mkdtemp(prefix="inbox-testing-"))
    try:
        with EmbeddedPostgres(folder) as embedded_url:
            yield embedded_url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def create_database(server: str, name: str, *, template: str | None = None) -> str:
    """Create database ``name`` on ``server`` (empty, or a copy of database ``template``)
    and return its connection string.

    A client that just closed its connections to the template (a seeding writer, a worker)
    leaves backends that exit a moment later; until they have, PostgreSQL refuses the copy.
    The copy waits for them (up to 30 s), not for a fixed time.
    """
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    statement = sql.SQL("create database {}").format(sql.Identifier(name))
    if template is not None:
        statement += sql.SQL(" template {}").format(sql.Identifier(template))
    deadline = time.monotonic() + _TEMPLATE_IDLE_SECONDS
    with psycopg.connect(server, autocommit=True) as conn:
        while True:
            try:
                conn.execute(statement)
                break
            except psycopg.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                # A database state has no event to await: it is re-read until it holds.
                time.sleep(0.05)
    return make_conninfo(server, dbname=name)


def drop_database(server: str, name: str) -> None:
    """Drop database ``name`` on ``server`` if it exists, ending its sessions first."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(server, autocommit=True) as conn:
        drop = sql.SQL("drop database if exists {} with (force)")
        conn.execute(drop.format(sql.Identifier(name)))


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@contextmanager
def new_database(
    server: str, *, template: str | None = None, prefix: str = "inbox_test"
) -> Iterator[str]:
    """Yield the URL of a new database on ``server``, named ``<prefix>_<random>``: empty,
    or a copy of database ``template``; dropped on exit."""
    name = _unique(prefix)
    url = create_database(server, name, template=template)
    try:
        yield url
    finally:
        drop_database(server, name)


def _migrate(url: str, tables: Sequence[str | Path]) -> None:
    from inbox._cli.dev.env import apply_sql, sql_files
    from inbox._core.database import migrate

    migrate.upgrade(url)
    apply_sql(url, sql_files(Path(t) for t in tables))


@contextmanager
def migrated_template(server: str, *, tables: Sequence[str | Path] = ()) -> Iterator[str]:
    """Yield the name of a new database at pg-inbox's latest schema with ``tables`` applied
    (as ``fresh_database``'s), to copy with ``new_database(server, template=name)``;
    dropped on exit."""
    with new_database(server, prefix="inbox_tpl") as url:
        _migrate(url, tables)
        from psycopg.conninfo import conninfo_to_dict

        yield str(conninfo_to_dict(url)["dbname"])


@contextmanager
def fresh_database(
    server: str | None = None, *, tables: Sequence[str | Path] = ()
) -> Iterator[str]:
    """Yield the URL of a new database at pg-inbox's latest schema, with the SQL files (or
    folders of ``*.sql``) in ``tables`` applied after it; dropped on exit."""
    with postgres_server(server) as found, new_database(found) as url:
        _migrate(url, tables)
        yield url


def settings_for_tests(config: str | Path | None = None, *, database_url: str) -> Settings:
    """Your settings (``config``, as ``--config`` would find it) on ``database_url``, with a
    made-up secret for every source whose secret is not set in this environment."""
    from inbox._cli.dev.env import with_secrets

    settings = load_settings(config, database={"url": database_url})
    settings, _filled = with_secrets(settings)
    return settings


@dataclass(frozen=True, slots=True)
class SignedRequest:
    """A webhook as the provider would send it to ``path``, signed with the source's secret."""

    source: str
    path: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    key: str = ""  # the idempotency key the sample carries


def signed_request(
    settings: Settings,
    source: str,
    *,
    body: bytes | None = None,
    event_type: str | None = None,
) -> SignedRequest:
    """Sign the source's sample payload (or ``body``, as given) the way its provider does."""
    from inbox._core.errors import ConfigError
    from inbox._receiving.samples import build_sample

    configured = settings.source(source)
    if configured is None:
        known = ", ".join(s.name for s in settings.sources) or "none"
        raise ConfigError(f"unknown source {source!r} (configured: {known})")
    path = f"/webhooks/{source}"
    sample = build_sample(
        configured,
        url=f"http://testserver{path}",
        now=time.time(),
        body=body,
        event_type=event_type,
    )
    return SignedRequest(source, path, sample.body, dict(sample.headers), sample.key)


def deliver(settings: Settings, request: SignedRequest) -> ReceiverResponse:
    """Receive ``request`` as ``inbox serve`` would (verify, extract, write), without HTTP.

    Delivering the same request twice is what a provider's retry looks like: the second
    reply says ``duplicate``.
    """
    from inbox._receiving.receive import receive, receiver_writer_kwargs
    from inbox._receiving.receiver import Receiver
    from inbox._writing.writer import InboxWriter

    body = [request.body]
    with InboxWriter(settings.database.url, **receiver_writer_kwargs(settings)) as writer:
        return receive(
            Receiver(settings),
            writer,
            request.source,
            method="POST",
            url=f"http://testserver{request.path}",
            headers=request.headers,
            read=lambda _size: body.pop() if body else b"",
        )
