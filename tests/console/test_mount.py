"""Where the console runs: mounted next to the receiver (``inbox serve`` with ``[console]
enabled``, ``inbox dev``), mounted in another app, and the ``inbox console`` commands."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from inbox.console import create_app
from inbox.console._dev import mount_for_dev, with_console
from inbox.console._passwords import verify_password
from inbox.contrib._asgi import create_app as create_receiver
from tests._commands import REPO, environment, run_inbox
from tests.console._seed import Seeded
from tests.console.conftest import OPERATOR, make_settings
from tests.receiver.test_receiver_cli import wait_until_healthy


def _sign_in(client: TestClient, base: str) -> None:
    page = client.get(f"{base}/login")
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token
    landed = client.post(
        f"{base}/login",
        data={"username": OPERATOR[0], "password": OPERATOR[1], "csrf": token.group(1)},
        follow_redirects=False,
    )
    assert landed.status_code == 303
    assert landed.headers["location"] == f"{base}/"


def test_next_to_the_receiver(seeded_db: Seeded) -> None:
    settings = make_settings(enabled=True)
    receiver = create_receiver(settings, dsn=seeded_db.url)
    with TestClient(with_console(receiver, settings, seeded_db.url)) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        login = client.get("/console/login")
        assert login.status_code == 200
        assert 'action="/console/login"' in login.text
        assert 'href="/console/static/console.css"' in login.text
        assert "path=/console" in login.headers["set-cookie"]
        _sign_in(client, "/console")
        detail = client.get(f"/console/events/{seeded_db.key_event}").text
        assert 'href="/console/events/' in client.get("/console/events").text
        assert f'href="/console/events/{seeded_db.key_event}/body"' in detail
        assert client.get("/console/static/console.css").status_code == 200
        found = client.get("/console/events?q=evt_123", follow_redirects=False)
        assert found.headers["location"] == f"/console/events/{seeded_db.key_event}"


def test_mounted_in_another_app(seeded_db: Seeded) -> None:
    from fastapi import FastAPI

    console = create_app(make_settings(), dsn=seeded_db.url)
    starlette_app = Starlette(routes=[Mount("/ops/inbox", app=console)])
    fastapi_app = FastAPI()
    fastapi_app.mount("/ops/inbox", create_app(make_settings(), dsn=seeded_db.url))
    for app in (starlette_app, fastapi_app):
        with TestClient(app) as client:
            redirect = client.get("/ops/inbox/events", follow_redirects=False)
            assert redirect.headers["location"] == "/ops/inbox/login?next=%2Fevents"
            _sign_in(client, "/ops/inbox")
            assert client.get("/ops/inbox/events").status_code == 200


def test_mount_for_dev_prints_a_one_time_link(seeded_db: Seeded, tmp_path: Path) -> None:
    settings = make_settings(secret_key=None)  # dev needs none: it makes a fresh one
    receiver = create_receiver(settings, dsn=seeded_db.url)
    app, login_path = mount_for_dev(settings, seeded_db.url, receiver, data_dir=tmp_path)
    assert login_path.startswith("/console/login/token/")
    with TestClient(app) as client:
        landed = client.get(login_path, follow_redirects=False)
        assert landed.status_code == 303
        assert landed.headers["location"] == "/console/"
        assert '<span id="whoami">dev' in client.get("/console/").text
        client.cookies.clear()
        assert client.get(login_path).status_code == 403


def _inbox(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return run_inbox(*args, stdin=stdin, env=_environment(**env))


def _environment(**env: str) -> dict[str, str]:
    """None of the suite's settings: no configuration file, only ``env``."""
    return environment(without=("INBOX_",), INBOX_CONFIG=os.devnull, **env)


def test_hash_password_command() -> None:
    made = _inbox("console", "hash-password", stdin="s3cret words\n")
    assert made.returncode == 0, made.stderr
    stored = made.stdout.strip()
    assert stored.startswith("scrypt$32768$8$1$")
    assert verify_password("s3cret words", stored)
    empty = _inbox("console", "hash-password", stdin="")
    assert empty.returncode == 2
    assert "no password on stdin" in empty.stderr
    assert "Traceback" not in empty.stderr


def test_console_usage_shows_the_action_as_optional() -> None:
    done = _inbox("console", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "usage: inbox console [-h] [--host HOST] [--port PORT] [ACTION ...]\n"
    )


def test_console_command_explains_a_missing_key(seeded_db: Seeded) -> None:
    refused = _inbox("console", INBOX_DATABASE_URL=seeded_db.url)
    assert refused.returncode == 2
    assert "secret key" in refused.stderr
    assert "INBOX_CONSOLE__SECRET_KEY" in refused.stderr
    bad = _inbox("console", INBOX_CONSOLE__BODIES="everyone", INBOX_DATABASE_URL=seeded_db.url)
    assert bad.returncode == 2
    assert "console.bodies" in bad.stderr


def _serving(command: list[str], url: str, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "inbox", *command, "--port", str(port)],
        cwd=REPO,
        env=_environment(INBOX_DATABASE_URL=url, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("command", [["serve"], ["console"]])
def test_served_by_the_command_line(
    seeded_db: Seeded, unused_tcp_port: int, command: list[str]
) -> None:
    """``inbox serve`` with ``[console] enabled`` and ``inbox console``: the console answers
    at /console, and SIGTERM stops the server cleanly (the pool closed)."""
    env = {
        "INBOX_CONSOLE__ENABLED": "true",
        "INBOX_CONSOLE__SECRET_KEY": "k" * 32,
        "INBOX_CONSOLE__TRUSTED_HEADER": "X-Forwarded-User",
        "INBOX_CONSOLE__TRUSTED_PROXIES": '["127.0.0.1/32"]',
    }
    process = _serving(command, seeded_db.url, unused_tcp_port, env)
    base = f"http://127.0.0.1:{unused_tcp_port}"
    try:
        wait_until_healthy(f"{base}/console/login", process)
        login = httpx.get(f"{base}/console/login")
        assert 'form id="login"' in login.text
        assert login.headers["x-frame-options"] == "DENY"
        # The SSO proxy (127.0.0.1) names the user; the X-Forwarded-For it adds must not
        # turn the peer into an untrusted address (the server keeps the real peer).
        sso = httpx.get(
            f"{base}/console/",
            headers={"X-Forwarded-User": OPERATOR[0], "X-Forwarded-For": "203.0.113.9"},
        )
        assert sso.status_code == 200
        assert OPERATOR[0] in sso.text
        assert 'id="whoami"' in sso.text
        if command == ["serve"]:
            assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
        else:
            home = httpx.get(f"{base}/", follow_redirects=False)
            assert home.headers["location"] == "/console/"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    # uvicorn re-raises the signal once its graceful shutdown is done
    assert process.returncode in (0, -signal.SIGTERM), err
    assert "Traceback" not in err
