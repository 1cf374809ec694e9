"""Every test that needs a database gets a fresh one, cloned from a migrated template.

No rollback-only fixtures: SKIP LOCKED and NOTIFY need real commits across connections.

``db_url`` logs in as the server's admin. The code under test of the receiver and the
worker gets ``receiver_url`` / ``worker_url`` instead: the same URL, or, when the suite
runs with ``INBOX_TEST_ROLES=least`` (CI runs tests/receiver and tests/processors so), the
same database logging in as a role that holds only that part's grants (tests/_roles.py).
Assertions and set-up keep ``db_url``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from inbox.testing import migrated_template, new_database
from tests._pg import postgres_server
from tests._roles import Roles, grant_business_tables, least_roles_mode, part_url

# The `spans` fixture: OpenTelemetry's in-memory exporter (tests/observability, tests/security).
pytest_plugins = ["tests._spans", "tests._open_connections"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """Connection string of a maintenance database on the server under test."""
    with postgres_server() as (conninfo, _where):
        yield conninfo


def pytest_configure(config: pytest.Config) -> None:
    least_roles_mode()  # a bad INBOX_TEST_ROLES stops the run at once, in one line


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``database`` every test that reaches the server under test (through
    ``pg_server``, which every database fixture stands on), so that CI's runs on a second
    server and as the least roles may leave out, with ``-m database``, the tests those
    cannot change: they ran on the embedded server already."""
    for item in items:
        if "pg_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.database)


def pytest_report_header(config: pytest.Config) -> str:
    import os

    roles = "; receiver and worker code as the least roles" if least_roles_mode() else ""
    if os.environ.get("INBOX_TEST_DATABASE_URL"):
        return f"pg-inbox tests: PostgreSQL from INBOX_TEST_DATABASE_URL{roles}"
    return f"pg-inbox tests: PostgreSQL from testcontainers if Docker answers, else embedded{roles}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One loud line when the browser tests were skipped for want of Chromium, and one when
    the pooler tests were for want of PgBouncer."""
    from tests._pgbouncer import MISSING_PGBOUNCER
    from tests.console._browser import MISSING_BROWSER

    skipped = terminalreporter.stats.get("skipped", [])
    for missing, what, install in (
        (MISSING_BROWSER, "browser", "chromium chromium-driver"),
        (MISSING_PGBOUNCER, "pooler", "pgbouncer"),
    ):
        left_out = [r for r in skipped if missing in str(r.longrepr)]
        if left_out:
            terminalreporter.write_line(
                f"{len(left_out)} {what} tests SKIPPED ({missing}):"
                f" apt-get install {install}, or set CI=1 to make this a failure",
                yellow=True,
                bold=True,
            )


@pytest.fixture(scope="session")
def least_roles(pg_server: str) -> Iterator[Roles | None]:
    """In least-roles mode, this session's roles (granted in the template by
    ``template_db``), dropped after the template; else None."""
    if not least_roles_mode():
        yield None
        return
    roles = Roles.random(pg_server)
    try:
        yield roles
    finally:
        with psycopg.connect(pg_server, autocommit=True) as conn:
            roles.drop(conn)


@pytest.fixture(scope="session")
def template_db(pg_server: str, least_roles: Roles | None) -> Iterator[str]:
    with migrated_template(pg_server) as name:
        if least_roles is not None:
            # Grants live in the database: made once here, every clone carries them.
            with psycopg.connect(make_conninfo(pg_server, dbname=name), autocommit=True) as conn:
                least_roles.create(conn)
                grant_business_tables(conn, least_roles)
        yield name


@pytest.fixture
def db_url(pg_server: str, template_db: str) -> Iterator[str]:
    """A fresh database at the head revision, dropped after the test."""
    with new_database(pg_server, template=template_db) as url:
        yield url


@pytest.fixture
def receiver_url(db_url: str, least_roles: Roles | None) -> str:
    """The URL the receiver under test connects with (see the module's docstring)."""
    return part_url(db_url, least_roles, "receiver")


@pytest.fixture
def worker_url(db_url: str, least_roles: Roles | None) -> str:
    """The URL the worker under test connects with (see the module's docstring)."""
    return part_url(db_url, least_roles, "worker")


@pytest.fixture
def empty_db_url(pg_server: str) -> Iterator[str]:
    """A fresh database with no schema at all (for migration tests)."""
    with new_database(pg_server, prefix="inbox_empty") as url:
        yield url


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
