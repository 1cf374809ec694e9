"""Helpers for your own tests of a pg-inbox project (``inbox init`` writes one that uses them).

::

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

from inbox._cli.devenv import apply_sql, sql_files, with_secrets
from inbox._core.settings import Settings, load_settings
from inbox._receiving.receiver import ReceiverResponse

__all__ = ["SignedRequest", "deliver", "fresh_database", "settings_for_tests", "signed_request"]

TEST_DATABASE_VARIABLE = "INBOX_TEST_DATABASE_URL"


@contextmanager
def fresh_database(
    server: str | None = None, *, tables: Sequence[str | Path] = ()
) -> Iterator[str]:
    """Yield the URL of a new database at pg-inbox's latest schema, with the SQL files (or
    folders of ``*.sql``) in ``tables`` applied after it; dropped on exit."""
    server = server or os.environ.get(TEST_DATABASE_VARIABLE)
    if server:
        with _database_on(server, [Path(t) for t in tables]) as url:
            yield url
        return
    from inbox._core.embedded import EmbeddedPostgres

    # Not under pytest's tmp_path: on a root machine the server runs as another user, which
    # must traverse the path (pytest keeps its base folder 0700).
    folder = Path(tempfile.mkdtemp(prefix="inbox-testing-"))
    try:
        with (
            EmbeddedPostgres(folder) as embedded_url,
            _database_on(embedded_url, [Path(t) for t in tables]) as url,
        ):
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _database_on(server: str, tables: list[Path]) -> Iterator[str]:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    from inbox._core import migrate as _migrate

    name = f"inbox_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = make_conninfo(server, dbname=name)
    try:
        _migrate.upgrade(url)
        apply_sql(url, sql_files(tables))
        yield url
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            drop = sql.SQL("drop database if exists {} with (force)")
            conn.execute(drop.format(sql.Identifier(name)))


def settings_for_tests(config: str | Path | None = None, *, database_url: str) -> Settings:
    """Your settings (``config``, as ``--config`` would find it) on ``database_url``, with a
    made-up secret for every source whose secret is not set in this environment."""
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
