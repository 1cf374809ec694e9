"""Every test that needs a database gets a fresh one, cloned from a migrated template.

No rollback-only fixtures: SKIP LOCKED and NOTIFY need real commits across connections.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._pg import (
    create_database,
    drop_database,
    migrated_template,
    postgres_server,
    unique_name,
)

# The `spans` fixture: OpenTelemetry's in-memory exporter (tests/observability, tests/security).
pytest_plugins = ["tests._spans"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """Connection string of a maintenance database on the server under test."""
    with postgres_server() as (conninfo, _where):
        yield conninfo


def pytest_report_header(config: pytest.Config) -> str:
    import os

    if os.environ.get("INBOX_TEST_DATABASE_URL"):
        return "pg-inbox tests: PostgreSQL from INBOX_TEST_DATABASE_URL"
    return "pg-inbox tests: PostgreSQL from testcontainers if Docker answers, else embedded"


@pytest.fixture(scope="session")
def template_db(pg_server: str) -> Iterator[str]:
    with migrated_template(pg_server) as name:
        yield name


@pytest.fixture
def db_url(pg_server: str, template_db: str) -> Iterator[str]:
    """A fresh database at the head revision, dropped after the test."""
    name = unique_name("inbox_test")
    url = create_database(pg_server, name, template=template_db)
    try:
        yield url
    finally:
        drop_database(pg_server, name)


@pytest.fixture
def empty_db_url(pg_server: str) -> Iterator[str]:
    """A fresh database with no schema at all (for migration tests)."""
    name = unique_name("inbox_empty")
    url = create_database(pg_server, name)
    try:
        yield url
    finally:
        drop_database(pg_server, name)


@pytest.fixture
def unused_tcp_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A folder for a PostgreSQL data directory of the test's own.

    Not under pytest's tmp_path: pytest keeps its base folder private (0700) and resets
    that mode, while the embedded server runs as another user that must traverse the path.
    """
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="inbox-test-server-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
