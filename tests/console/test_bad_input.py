"""Input the database cannot take, or the code does not expect: the console's own error page
with its security headers (400 for bad input, 500 for a fault), never a bare 500."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from inbox.console import create_app
from tests._wait import scalar
from tests.console._seed import Seeded
from tests.console.conftest import OPERATOR, csrf_of, make_settings, sign_in
from tests.console.test_security import _assert_security_headers

NUL = "a\x00b"

QUERIES = [
    {"q": NUL},
    {"q": f"shop:{NUL}"},
    {"source": NUL},
    {"type": NUL},
    {"after": NUL},
    {"cursor": NUL},
    {"source": "shop", NUL: "1"},
]


@pytest.fixture
def operator(seeded_db: Seeded) -> TestClient:
    app = create_app(make_settings(), dsn=seeded_db.url)
    client = TestClient(app, raise_server_exceptions=False)
    sign_in(client, OPERATOR)
    return client


def _refused(response: object, where: object) -> None:
    status = getattr(response, "status_code", None)
    text = str(getattr(response, "text", ""))
    assert status == 400, (where, status, text[:200])
    assert '<section id="bad-request" class="error">' in text or 'id="filter-errors"' in text
    _assert_security_headers(getattr(response, "headers", {}), str(where))


@pytest.mark.parametrize("path", ["/events", "/dead", "/replay", "/audit"])
def test_a_nul_in_a_query_is_a_bad_request(operator: TestClient, path: str) -> None:
    for params in QUERIES:
        _refused(operator.get(path, params=params), (path, params))


def test_a_nul_in_a_form_is_a_bad_request(operator: TestClient, seeded_db: Seeded) -> None:
    token = csrf_of(operator, "/replay")
    dead = str(seeded_db.dead_ids[0])
    forms = {
        "/replay/preview": [{"source": NUL}, {"type": NUL}, {"source": "shop", "after": NUL}],
        "/replay": [
            {"source": "shop", "reason": NUL},
            {"ids": dead, "reason": "fix", "require_version": NUL},
        ],
        "/dead/retry": [
            {"ids": dead, "reason": NUL},
            {"ids": dead, "reason": "fix", "require_version": NUL},
            {"ids": dead, "reason": "fix", "source": NUL},
        ],
        "/login": [{"username": NUL, "password": "x"}],
    }
    for path, cases in forms.items():
        for form in cases:
            _refused(operator.post(path, data={**form, "csrf": token}), (path, form))
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0


def test_a_dead_letter_cursor_that_is_not_one_of_ours(operator: TestClient) -> None:
    for cursor in ["abc", "123", "eyJ4IjogMX0"]:
        page = operator.get("/dead", params={"cursor": cursor})
        _refused(page, cursor)
        assert 'data-field="cursor"' in page.text
        assert "not a page cursor" in page.text


def test_the_dead_letters_next_page_opens(operator: TestClient) -> None:
    def shown(html: str) -> list[int]:
        return [int(i) for i in re.findall(r'class="event-link" href="[^"]*/events/(\d+)"', html)]

    first = operator.get("/dead?limit=1")
    link = re.search(r'<a id="next-page" href="([^"]+)"', first.text)
    assert link, "no next page"
    second = operator.get(link.group(1).replace("&amp;", "&"))
    assert second.status_code == 200, second.text[:300]
    assert len(shown(first.text)) == len(shown(second.text)) == 1
    assert shown(second.text)[0] < shown(first.text)[0]


def test_a_fault_is_the_consoles_page_with_its_headers(
    operator: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("a fault nobody expected")

    monkeypatch.setattr("inbox.console._api.search", broken)
    page = operator.get("/events", params={"q": "evt_123"})
    assert page.status_code == 500
    assert "<h1>500 · Server error</h1>" in page.text
    assert "a fault nobody expected" not in page.text  # details go to the log only
    _assert_security_headers(page.headers, "500")
    assert page.headers["cache-control"] == "no-store"
