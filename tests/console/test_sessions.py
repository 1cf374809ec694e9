"""Sessions end on the server: sign-out, a change of the user's password or role, and the
absolute lifetime each end a session, whoever holds a copy of its cookie."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from starlette.testclient import TestClient

from inbox._core.config.settings import Settings
from inbox.console import create_app
from inbox.console._passwords import hash_password
from tests._wait import scalar
from tests.console._seed import Seeded
from tests.console.conftest import OPERATOR, VIEWER, csrf_of, live_console, make_settings, sign_in

COOKIE = "inbox_console"


def _sign_in(client: httpx.Client, user: tuple[str, str]) -> None:
    token = _csrf(client, "/login")
    form = {"username": user[0], "password": user[1], "csrf": token}
    assert client.post("/login", data=form).status_code == 303


def _csrf(client: httpx.Client, path: str) -> str:
    text = client.get(path).text
    return text.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def _signed_in(base: str, cookie: str) -> bool:
    with httpx.Client(base_url=base, cookies={COOKIE: cookie}) as thief:
        return thief.get("/").status_code == 200


def test_a_copied_cookie_is_no_session_after_sign_out(seeded_db: Seeded, tmp_path: Path) -> None:
    with live_console(seeded_db, tmp_path) as server:
        base = server.base_url + "/console"
        with httpx.Client(base_url=base) as olga:
            _sign_in(olga, OPERATOR)
            copied = olga.cookies[COOKIE]
            assert _signed_in(base, copied)
            assert olga.post("/logout", data={"csrf": _csrf(olga, "/")}).status_code == 303
        assert not _signed_in(base, copied)
        # The row went with the sign-out; only a digest of the cookie's token was stored.
        assert scalar(seeded_db.url, "select count(*) from inbox_console_sessions") == 0


def test_a_session_ends_after_its_absolute_lifetime(seeded_db: Seeded, tmp_path: Path) -> None:
    lifetime = 3.0
    extra = f"session_max_hours = {lifetime / 3600}"
    with live_console(seeded_db, tmp_path, extra=extra) as server:
        base = server.base_url + "/console"
        with httpx.Client(base_url=base) as olga:
            _sign_in(olga, OPERATOR)
            started = time.monotonic()
            while time.monotonic() - started < lifetime - 1:  # in use all along
                assert olga.get("/").status_code == 200
                time.sleep(0.5)
            time.sleep(1.5)
            assert olga.get("/").status_code == 303


def test_a_password_or_role_change_ends_that_users_sessions(seeded_db: Seeded) -> None:
    settings = make_settings()
    cookies = {}
    for user in (VIEWER, OPERATOR):
        with TestClient(create_app(settings, dsn=seeded_db.url)) as client:
            sign_in(client, user)
            cookies[user[0]] = client.cookies[COOKIE]

    def alive(app_settings: Settings, name: str) -> bool:
        with TestClient(create_app(app_settings, dsn=seeded_db.url)) as client:
            client.cookies.set(COOKIE, cookies[name])
            return client.get("/", follow_redirects=False).status_code == 200

    assert alive(settings, VIEWER[0])  # a restart with the same settings ends nothing
    users = [u.model_dump() for u in settings.console.users]
    for u in users:
        u["password_hash"] = u["password_hash"] and u["password_hash"].get_secret_value()
    new_password = [
        {**u, "password_hash": hash_password("a-new-one", n=2**10)} if u["name"] == VIEWER[0] else u
        for u in users
    ]
    changed = make_settings(users=new_password)
    assert not alive(changed, VIEWER[0])
    assert alive(changed, OPERATOR[0])  # another user's session is left alone
    demoted = make_settings(
        users=[{**u, "role": "viewer"} if u["name"] == OPERATOR[0] else u for u in users]
    )
    assert not alive(demoted, OPERATOR[0])
    # The operator's sign-in with the new settings works again at once.
    with TestClient(create_app(demoted, dsn=seeded_db.url)) as client:
        sign_in(client, OPERATOR)
        assert client.get("/").status_code == 200
        assert csrf_of(client, "/")
