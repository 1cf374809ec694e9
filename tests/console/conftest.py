"""Fixtures of the console's tests, shared with the browser tests (names are stable):
``seeded_db`` (a fresh clone of the seeded inbox), ``console_settings`` (a viewer and an
operator with known passwords), ``console_app`` and ``client``; ``browser`` (the system's
Chromium, driven by selenium, which only the browser tests import), ``console`` (``inbox
console`` serving the seeded inbox in its own process) and ``shots`` (their screenshots)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from psycopg.conninfo import conninfo_to_dict
from starlette.applications import Starlette
from starlette.testclient import TestClient

from inbox._core.config.settings import Settings
from inbox.console import create_app
from inbox.console._passwords import hash_password
from inbox.testing import new_database
from tests.console._seed import Seeded, seed

if TYPE_CHECKING:
    from selenium import webdriver

    from tests.console._browser import LiveServer, Screenshots

VIEWER = ("vera", "viewer-password")
OPERATOR = ("olga", "operator-password")
SECRET_KEY = "test-secret-key-0123456789abcdef"
TRUSTED_PROXY = "10.1.2.3"


def make_settings(**console: object) -> Settings:
    """Settings with the viewer and the operator (cheap hashes: tests sign in often)."""
    users = [
        {"name": VIEWER[0], "role": "viewer", "password_hash": hash_password(VIEWER[1], n=2**10)},
        {
            "name": OPERATOR[0],
            "role": "operator",
            "password_hash": hash_password(OPERATOR[1], n=2**10),
        },
        {"name": "sso-operator", "role": "operator"},
    ]
    values: dict[str, object] = {
        "users": users,
        "secret_key": SECRET_KEY,
        "trusted_header": "X-Forwarded-User",
        "trusted_proxies": ["10.0.0.0/8"],
        **console,
    }
    return Settings(console=values, database={"connect_timeout_seconds": 1.0})


@pytest.fixture(scope="session")
def seeded_template(pg_server: str, template_db: str) -> Iterator[tuple[str, Seeded]]:
    """Seeded once per session; each test gets a clone."""
    with new_database(pg_server, template=template_db, prefix="inbox_console_seed") as url:
        yield str(conninfo_to_dict(url)["dbname"]), seed(url)


@pytest.fixture
def seeded_db(pg_server: str, seeded_template: tuple[str, Seeded]) -> Iterator[Seeded]:
    template, seeded = seeded_template
    with new_database(pg_server, template=template, prefix="inbox_console") as url:
        yield dataclasses.replace(seeded, url=url)


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    from tests.console._browser import chromium

    with chromium() as driver:
        yield driver


def _console_toml(path: Path, extra: str = "", cost: int = 2**10) -> Path:
    """An ``inbox.toml`` with the console's test users (as ``inbox console`` reads it);
    ``extra`` lines go in its ``[console]`` section, ``cost`` is the hashes' scrypt N."""
    users = "".join(
        f"""
[[console.users]]
name = "{name}"
role = "{role}"
password_hash = "{hash_password(password, n=cost)}"
"""
        for (name, password), role in ((OPERATOR, "operator"), (VIEWER, "viewer"))
    )
    path.write_text(
        f"""
[console]
secret_key = "{SECRET_KEY}"
{extra}
{users}""",
        encoding="utf-8",
    )
    return path


@contextmanager
def live_console(
    seeded_db: Seeded, folder: Path, *, extra: str = "", cost: int = 2**10
) -> Iterator[LiveServer]:
    """``inbox console`` on a free port, serving the seeded inbox (see ``_console_toml``)."""
    from tests.console._browser import free_port, serve

    port = free_port()
    config = _console_toml(folder / "inbox.toml", extra, cost)
    argv = [sys.executable, "-m", "inbox", "--config", str(config)]
    server = serve(
        [*argv, "console", "--host", "127.0.0.1", "--port", str(port)],
        folder / "console.log",
        port=port,
        env={"INBOX_DATABASE__URL": seeded_db.url},  # any URL, no quoting into TOML
    )
    try:
        yield next(server)
    finally:
        server.close()


@pytest.fixture
def console(seeded_db: Seeded, tmp_path: Path) -> Iterator[LiveServer]:
    """``inbox console`` on a free port, serving the seeded inbox."""
    with live_console(seeded_db, tmp_path) as server:
        yield server


@pytest.fixture
def shots(tmp_path: Path) -> Screenshots:
    from tests.console._browser import screenshots

    return screenshots(tmp_path)


@pytest.fixture
def console_settings() -> Settings:
    return make_settings()


@pytest.fixture
def console_app(console_settings: Settings, seeded_db: Seeded) -> Starlette:
    return create_app(console_settings, dsn=seeded_db.url)


@pytest.fixture
def client(console_app: Starlette) -> Iterator[TestClient]:
    """Unsigned; ``sign_in(client, VIEWER)`` signs it in."""
    with TestClient(console_app, base_url="http://console.test") as test_client:
        yield test_client


def csrf_of(client: TestClient, path: str = "/login") -> str:
    """The CSRF token the page's forms carry."""
    import re

    page = client.get(path)
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def sign_in(client: TestClient, user: tuple[str, str]) -> None:
    response = client.post(
        "/login",
        data={"username": user[0], "password": user[1], "csrf": csrf_of(client)},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
