"""Roles, CSRF, escaping, the body rules and the headers of every response."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from inbox.console import create_app
from tests._wait import scalar
from tests.console._seed import XSS, Seeded
from tests.console.conftest import OPERATOR, VIEWER, csrf_of, make_settings, sign_in

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self';"
    " frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)


def _assert_security_headers(headers: object, where: str) -> None:
    assert isinstance(headers, dict) or hasattr(headers, "get")
    get = headers.get  # type: ignore[attr-defined]
    assert get("content-security-policy") == CSP, where
    assert get("x-content-type-options") == "nosniff", where
    assert get("referrer-policy") == "no-referrer", where
    assert get("x-frame-options") == "DENY", where


def test_security_headers_on_every_response(client: TestClient, seeded_db: Seeded) -> None:
    for path in ["/login", "/static/console.css", "/static/live.js", "/no-such-page", "/"]:
        response = client.get(path, follow_redirects=False)
        _assert_security_headers(response.headers, path)
    sign_in(client, OPERATOR)
    for path in [
        "/",
        "/events",
        f"/events/{seeded_db.key_event}",
        "/events/424242",
        "/dead",
        "/replay",
        "/audit",
        f"/events/{seeded_db.key_event}/body",
    ]:
        response = client.get(path)
        _assert_security_headers(response.headers, path)
    detail = client.get(f"/events/{seeded_db.key_event}")
    assert detail.headers["cache-control"] == "no-store"  # the page holds a body
    assert client.get(f"/events/{seeded_db.key_event}/body").headers["cache-control"] == (
        "no-store"
    )


def test_no_inline_script_or_style_in_any_page(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    for path in [
        "/login",
        "/",
        "/events",
        f"/events/{seeded_db.key_event}",
        "/dead",
        "/replay",
        "/audit",
    ]:
        html = client.get(path).text
        assert "<style" not in html, path
        assert " style=" not in html, path
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == [], path
        assert not re.search(r"\son[a-z]+=", html), path  # no event-handler attributes


def test_csrf_missing_or_wrong_is_refused(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    token = csrf_of(client, "/replay")
    form = {"source": "shop", "reason": "test", "ids": str(seeded_db.dead_ids[0])}
    for path in ["/replay/preview", "/replay", "/dead/retry", "/logout"]:
        for bad in [{}, {"csrf": ""}, {"csrf": token[:-1] + ("x" if token[-1] != "x" else "y")}]:
            refused = client.post(path, data={**form, **bad})
            assert refused.status_code == 403, (path, bad)
            assert 'id="forbidden"' in refused.text
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0


def test_a_token_of_another_session_is_refused(seeded_db: Seeded, client: TestClient) -> None:
    app = create_app(make_settings(), dsn=seeded_db.url)
    with TestClient(app) as other:
        sign_in(other, OPERATOR)
        foreign = csrf_of(other, "/replay")
    sign_in(client, OPERATOR)
    refused = client.post("/replay/preview", data={"source": "shop", "csrf": foreign})
    assert refused.status_code == 403


def test_login_form_needs_its_token(client: TestClient) -> None:
    refused = client.post("/login", data={"username": VIEWER[0], "password": VIEWER[1]})
    assert refused.status_code == 403


def test_signing_in_changes_the_csrf_token(client: TestClient) -> None:
    before = csrf_of(client)
    sign_in(client, OPERATOR)
    assert csrf_of(client, "/") != before


def test_viewer_sees_no_replay_and_a_forged_post_is_refused(
    client: TestClient, seeded_db: Seeded
) -> None:
    sign_in(client, VIEWER)
    detail = client.get(f"/events/{seeded_db.key_event}")
    assert 'id="replay-event"' not in detail.text
    assert 'id="replay-filter"' not in client.get("/replay").text
    dead = client.get("/dead")
    assert 'id="dead-retry"' not in dead.text
    assert 'name="ids"' not in dead.text
    token = csrf_of(client, "/")
    forged = {"csrf": token, "source": "shop", "reason": "forged", "include_processed": "1"}
    for path in ["/replay/preview", "/replay", "/dead/retry"]:
        refused = client.post(path, data={**forged, "ids": str(seeded_db.dead_ids[0])})
        assert refused.status_code == 403, path
        assert 'id="forbidden"' in refused.text
        assert "operator role" in refused.text
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0


def test_no_get_changes_anything(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    for path in ["/dead/retry", "/replay/preview", "/logout"]:
        assert client.get(path + "?csrf=x&reason=x&ids=1").status_code == 405, path
    client.get("/replay?source=shop&reason=x")  # the form only
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0


def test_everything_from_the_database_is_escaped(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    escaped = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
    pages = {
        "detail": client.get(f"/events/{seeded_db.xss_event}").text,
        "list": client.get("/events?source=xss").text,
        "dead": client.get("/dead").text,
        "search": client.get("/events", params={"q": XSS + " nothing"}).text,
        "filter": client.get("/events", params={"source": "xss", "type": XSS}).text,
    }
    for name, html in pages.items():
        assert "<script>alert" not in html, name
    detail = pages["detail"]
    assert detail.count(escaped) >= 4  # key, type, header, attempt errors ...
    assert re.search(r"<td>&lt;script&gt;alert\(&#39;x&#39;\)&lt;/script&gt;</td>", detail)
    assert '<div class="attempt-error error-text">ValueError: ' + escaped in detail
    assert "&#34;note&#34;: &#34;" + escaped in detail  # the body, pretty JSON, as text
    assert escaped in pages["list"]
    assert escaped in pages["filter"]  # the form shows the typed value again, as text


@pytest.mark.parametrize(
    ("bodies", "viewer_sees", "operator_sees"),
    [("operators", False, True), ("all", True, True), ("none", False, False)],
)
def test_who_sees_bodies(
    seeded_db: Seeded, bodies: str, viewer_sees: bool, operator_sees: bool
) -> None:
    app = create_app(make_settings(bodies=bodies), dsn=seeded_db.url)
    event = seeded_db.key_event
    for user, sees in [(VIEWER, viewer_sees), (OPERATOR, operator_sees)]:
        with TestClient(app) as client:
            sign_in(client, user)
            page = client.get(f"/events/{event}").text
            assert ("&#34;amount&#34;: 4200" in page) is sees, (bodies, user)
            assert ("&#34;amount&#34;: 4300" in page) is sees, (bodies, user)  # the repeat
            assert ('id="download-body"' in page) is sees
            download = client.get(f"/events/{event}/body")
            assert download.status_code == (200 if sees else 403), (bodies, user)
            delivery = client.get(f"/events/{event}/deliveries/1/body")
            assert delivery.status_code in ((200, 404) if sees else (403,))
            if sees:
                assert download.content.startswith(b'{"id": "evt_123"')


def test_credential_headers_are_redacted_for_everyone(seeded_db: Seeded) -> None:
    from inbox import InboxWriter

    credentials = {
        "x-api-key": "key-abc123",
        "X-Auth-Token": "tok-def456",
        "cookie": "session=ghi789",
        "x-shop-secret": "jkl012",
    }
    with InboxWriter(seeded_db.url, notify="off") as writer:
        event = writer.write("shop", "with-keys", b"{}", headers=credentials).event_id
    default = create_app(make_settings(), dsn=seeded_db.url)
    # Configured, the list replaces the default (the receiver's list still applies).
    listed = create_app(make_settings(redact_headers=["X-Shop-Secret"]), dsn=seeded_db.url)
    for app, hidden, shown in [
        (default, ["abc123", "def456", "ghi789"], ["jkl012"]),
        (listed, ["jkl012"], ["abc123"]),
    ]:
        for user in (VIEWER, OPERATOR):
            with TestClient(app) as client:
                sign_in(client, user)
                page = client.get(f"/events/{event}").text
            assert 'id="headers"' in page
            for value in hidden:
                assert value not in page, (user, value)
            for value in shown:
                assert value in page, (user, value)
            assert '<td class="redacted">[redacted]</td>' in page
