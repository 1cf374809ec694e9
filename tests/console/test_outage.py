"""The database goes away: the console answers 503 (``#db-unavailable``), never a 500, and
serves pages again by itself when it is back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from inbox.console import create_app
from tests._wait import wait_for
from tests.console._outage import OutageProxy
from tests.console._seed import Seeded
from tests.console.conftest import OPERATOR, csrf_of, make_settings, sign_in


@pytest.fixture
def proxy(seeded_db: Seeded) -> Iterator[OutageProxy]:
    proxy = OutageProxy(seeded_db.url)
    try:
        yield proxy
    finally:
        proxy.close()


def test_database_down_is_a_503_page_and_the_console_recovers(
    proxy: OutageProxy, seeded_db: Seeded
) -> None:
    app = create_app(make_settings(), dsn=proxy.conninfo())
    with TestClient(app, base_url="http://console.test") as client:
        sign_in(client, OPERATOR)
        detail = f"/events/{seeded_db.key_event}"
        assert client.get(detail).status_code == 200

        proxy.down()
        for path in ("/", "/events", detail, "/dead", "/audit"):
            page = client.get(path)
            assert page.status_code == 503, (path, page.status_code)
            assert 'id="db-unavailable"' in page.text
            assert "database is unavailable" in page.text
            assert page.headers["content-security-policy"].startswith("default-src 'self'")
        # Signing in needs the database before the password is checked: the count is there.
        form = {"username": OPERATOR[0], "password": OPERATOR[1], "csrf": csrf_of(client)}
        signing_in = client.post("/login", data=form, follow_redirects=False)
        assert signing_in.status_code == 503
        assert 'id="db-unavailable"' in signing_in.text

        proxy.up()
        wait_for(
            lambda: client.get(detail).status_code == 200,
            timeout=30,
            what="the console to serve pages again",
        )
        # Still signed in: an outage ends no session (its row is checked once it is back).
        page = client.get(detail, follow_redirects=False)
        assert "evt_123" in page.text
        assert 'id="whoami"' in page.text
