"""Sign-in over HTTP: every page needs it; passwords, the rate limit, sessions (cookie
attributes, idle expiry, sign-out), the trusted header, the one-time dev link."""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from inbox._core.errors import ConfigError
from inbox.console import create_app
from inbox.console._passwords import hash_password, verify_password
from tests.console._seed import Seeded
from tests.console.conftest import (
    OPERATOR,
    TRUSTED_PROXY,
    VIEWER,
    csrf_of,
    make_settings,
    sign_in,
)

PAGES = [
    "/",
    "/events",
    "/events/1",
    "/events/1/body",
    "/dead",
    "/replay",
    "/audit",
    "/replay/runs/1",
    "/events?q=evt_123",
]
ACTIONS = ["/replay/preview", "/replay", "/dead/retry"]


def test_every_page_needs_a_sign_in(client: TestClient) -> None:
    for path in PAGES:
        page = client.get(path, follow_redirects=False)
        assert page.status_code == 303, path
        assert page.headers["location"].startswith("/login?next=")
    login = client.get("/events?source=shop", follow_redirects=True)
    assert 'form id="login"' in login.text
    assert 'value="/events?source=shop"' in login.text  # where it goes back to


def test_actions_refuse_an_anonymous_post(client: TestClient) -> None:
    token = csrf_of(client)
    for path in ACTIONS:
        refused = client.post(path, data={"csrf": token, "reason": "x", "ids": "1"})
        assert refused.status_code == 403, path
        assert 'id="forbidden"' in refused.text


def test_wrong_password_and_unknown_user_are_refused_alike(client: TestClient) -> None:
    for name, password in [(VIEWER[0], "not-it"), ("nobody", "whatever"), ("sso-operator", "")]:
        page = client.post(
            "/login", data={"username": name, "password": password, "csrf": csrf_of(client)}
        )
        assert page.status_code == 401
        assert "Wrong user name or password." in page.text
    assert client.get("/", follow_redirects=False).status_code == 303


def test_sign_in_then_out(client: TestClient) -> None:
    sign_in(client, VIEWER)
    home = client.get("/")
    assert home.status_code == 200
    assert '<span id="whoami">vera' in home.text
    assert 'form id="logout"' in home.text
    refused = client.post("/logout", data={})
    assert refused.status_code == 403  # no CSRF token: still signed in
    assert client.get("/", follow_redirects=False).status_code == 200
    out = client.post("/logout", data={"csrf": csrf_of(client, "/")}, follow_redirects=False)
    assert out.status_code == 303
    assert client.get("/", follow_redirects=False).status_code == 303


def test_sign_in_goes_back_to_the_page_asked_for_but_never_off_site(client: TestClient) -> None:
    def land(next_value: str) -> str:
        client.cookies.clear()
        response = client.post(
            "/login",
            data={
                "username": OPERATOR[0],
                "password": OPERATOR[1],
                "csrf": csrf_of(client),
                "next": next_value,
            },
            follow_redirects=False,
        )
        return response.headers["location"]

    assert land("/events?source=shop") == "/events?source=shop"
    assert land("//evil.example/x") == "/"
    assert land("https://evil.example/") == "/"
    assert land("/\t/evil.example") == "/"
    assert land("/\\evil.example") == "/"


def test_failed_sign_ins_are_limited_per_user_and_address(seeded_db: Seeded) -> None:
    app = create_app(make_settings(login_attempts=3), dsn=seeded_db.url)
    with TestClient(app, client=("192.0.2.7", 5000)) as client:
        for _ in range(3):
            failed = client.post(
                "/login",
                data={"username": VIEWER[0], "password": "guess", "csrf": csrf_of(client)},
            )
            assert failed.status_code == 401
        limited = client.post(
            "/login", data={"username": VIEWER[0], "password": VIEWER[1], "csrf": csrf_of(client)}
        )
        assert limited.status_code == 429
        assert "Too many attempts, try again in" in limited.text
        assert 1 <= int(limited.headers["retry-after"]) <= 300
        assert client.get("/", follow_redirects=False).status_code == 303  # not signed in
        sign_in(client, OPERATOR)  # another user from the same address is not limited
    with TestClient(app, client=("192.0.2.8", 5000)) as elsewhere:
        sign_in(elsewhere, VIEWER)  # the same user from another address is not either


def test_session_cookie_attributes(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    cookie = client.get("/").headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert "path=/" in cookie
    assert "Secure" not in cookie  # plain http: a Secure cookie would never come back
    app = create_app(make_settings(), dsn=seeded_db.url)
    with TestClient(app, base_url="https://console.test") as https:
        assert "Secure" in https.get("/login").headers["set-cookie"]
    ended_tls = {"X-Forwarded-Proto": "https"}
    with TestClient(app, client=(TRUSTED_PROXY, 443)) as proxied:
        assert "Secure" in proxied.get("/login", headers=ended_tls).headers["set-cookie"]
    with TestClient(app, client=("192.0.2.9", 443)) as direct:  # not a proxy: not believed
        assert "Secure" not in direct.get("/login", headers=ended_tls).headers["set-cookie"]


def test_an_idle_session_expires(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    sign_in(client, VIEWER)
    assert client.get("/", follow_redirects=False).status_code == 200
    later = time.time() + 29 * 60
    monkeypatch.setattr("inbox.console._session.time.time", lambda: later)
    assert client.get("/", follow_redirects=False).status_code == 200  # use keeps it alive
    much_later = later + 31 * 60
    monkeypatch.setattr("inbox.console._session.time.time", lambda: much_later)
    assert client.get("/", follow_redirects=False).status_code == 303


def test_a_tampered_cookie_is_no_session(client: TestClient) -> None:
    sign_in(client, OPERATOR)
    value = client.cookies["inbox_console"]
    client.cookies.clear()
    client.cookies.set("inbox_console", value[:-2] + ("AA" if value[-2:] != "AA" else "BB"))
    assert client.get("/", follow_redirects=False).status_code == 303


def test_a_removed_user_is_signed_out(seeded_db: Seeded) -> None:
    settings = make_settings()
    with TestClient(create_app(settings, dsn=seeded_db.url)) as client:
        sign_in(client, VIEWER)
        cookie = client.cookies["inbox_console"]
    fewer = make_settings(users=[u for u in settings.console.users if u.name != VIEWER[0]])
    with TestClient(create_app(fewer, dsn=seeded_db.url)) as client:
        client.cookies.set("inbox_console", cookie)
        assert client.get("/", follow_redirects=False).status_code == 303


def test_trusted_header_signs_in_only_from_a_trusted_proxy(seeded_db: Seeded) -> None:
    app = create_app(make_settings(), dsn=seeded_db.url)
    header = {"X-Forwarded-User": "sso-operator"}
    with TestClient(app, client=(TRUSTED_PROXY, 443)) as proxied:
        page = proxied.get("/", headers=header)
        assert page.status_code == 200
        assert '<span id="whoami">sso-operator <span class="role">(operator)' in page.text
        stranger = proxied.get("/", headers={"X-Forwarded-User": "someone"})
        assert '<span id="whoami">someone <span class="role">(viewer)' in stranger.text
    with TestClient(app, client=("192.0.2.50", 443)) as direct:
        refused = direct.get("/", headers=header, follow_redirects=False)
        assert refused.status_code == 303
        assert refused.headers["location"].startswith("/login")


def test_trusted_header_is_off_unless_configured(seeded_db: Seeded) -> None:
    app = create_app(make_settings(trusted_header=None), dsn=seeded_db.url)
    with TestClient(app, client=(TRUSTED_PROXY, 443)) as proxied:
        page = proxied.get(
            "/", headers={"X-Forwarded-User": "sso-operator"}, follow_redirects=False
        )
        assert page.status_code == 303


def test_dev_link_signs_in_once(seeded_db: Seeded) -> None:
    app = create_app(make_settings(), dsn=seeded_db.url, dev_login_token="one-time-token")
    with TestClient(app) as client:
        assert client.get("/login/token/wrong").status_code == 403
        landed = client.get("/login/token/one-time-token", follow_redirects=False)
        assert landed.status_code == 303
        page = client.get("/")
        assert '<span id="whoami">dev <span class="role">(operator)' in page.text
    with TestClient(app) as again:
        used = again.get("/login/token/one-time-token", follow_redirects=False)
        assert used.status_code == 403
        assert again.get("/", follow_redirects=False).status_code == 303


def test_no_dev_link_without_a_token(client: TestClient) -> None:
    assert client.get("/login/token/anything").status_code == 403


def test_the_console_refuses_to_start_without_a_secret_key(seeded_db: Seeded) -> None:
    with pytest.raises(ConfigError, match="secret key") as caught:
        create_app(make_settings(secret_key=None), dsn=seeded_db.url)
    assert "secrets.token_urlsafe" in str(caught.value)
    with pytest.raises(ConfigError, match="too short"):
        create_app(make_settings(secret_key="short"), dsn=seeded_db.url)


def test_secret_key_from_a_file(seeded_db: Seeded, tmp_path: object) -> None:
    from pathlib import Path

    key_file = Path(str(tmp_path)) / "key"
    key_file.write_text("a-key-from-a-file-0123456789\n")
    app = create_app(make_settings(secret_key=None, secret_key_file=key_file), dsn=seeded_db.url)
    with TestClient(app) as client:
        sign_in(client, VIEWER)


def test_password_hash_format() -> None:
    stored = hash_password("correct horse", n=2**10)
    scheme, n, r, p, _salt, _digest = stored.split("$")
    assert (scheme, n, r, p) == ("scrypt", "1024", "8", "1")
    assert verify_password("correct horse", stored)
    assert not verify_password("correct horsf", stored)
    assert hash_password("correct horse", n=2**10) != stored  # salted
    for broken in ["", "scrypt$1$2", "bcrypt$1$8$1$aa$bb", stored.replace("$8$", "$x$")]:
        assert not verify_password("correct horse", broken)
    with pytest.raises(ValueError, match="empty"):
        hash_password("")


def test_a_trusted_header_user_acts_with_the_sessions_csrf_token(seeded_db: Seeded) -> None:
    from tests._wait import rows

    app = create_app(make_settings(), dsn=seeded_db.url)
    header = {"X-Forwarded-User": "sso-operator"}
    with TestClient(app, client=(TRUSTED_PROXY, 443), headers=header) as proxied:
        token = csrf_of(proxied, "/dead")
        started = proxied.post(
            "/dead/retry",
            data={"csrf": token, "ids": str(seeded_db.dead_ids[0]), "reason": "sso retry"},
            follow_redirects=False,
        )
        assert started.status_code == 303
    assert rows(seeded_db.url, "select created_by, via from inbox_replays") == [
        ("sso-operator", "console")
    ]
