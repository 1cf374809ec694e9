"""The one-time sign-in links of ``inbox dev``: its banner's, and the ones ``inbox console
link`` mints while it runs; a used link's page names the command that makes a new one."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from inbox.console._dev import mount_for_dev
from inbox.console._links import LINK_LIFETIME_SECONDS, LINKS_FILE, DevToken, mint_link
from inbox.contrib._asgi import create_app as create_receiver
from tests._commands import REPO, environment, run_inbox
from tests.console._seed import Seeded
from tests.console.conftest import make_settings
from tests.test_cli_dev import Dev, postgres_serving


def test_a_used_link_names_the_command_that_makes_a_new_one(
    seeded_db: Seeded, tmp_path: Path
) -> None:
    settings = make_settings(secret_key=None, users=[])  # as in dev: nobody has a password
    receiver = create_receiver(settings, dsn=seeded_db.url)
    app, login_path = mount_for_dev(settings, seeded_db.url, receiver, data_dir=tmp_path)
    with TestClient(app) as client:
        assert client.get(login_path, follow_redirects=False).status_code == 303
        client.cookies.clear()
        used = client.get(login_path)
    assert used.status_code == 403
    command = re.search(
        r'<code id="new-link-command">([^<]+)</code> in <code>([^<]+)</code>', used.text
    )
    assert command is not None, used.text
    assert command.groups() == ("inbox console link", str(Path.cwd()))
    assert 'href="/console/login"' not in used.text  # no sign-in form nobody can use
    assert not (tmp_path / LINKS_FILE).exists()  # a wrong link creates nothing


def test_a_minted_link_works_once_and_not_after_it_expired(tmp_path: Path) -> None:
    token = DevToken("banner", data_dir=tmp_path)
    first, second = mint_link(tmp_path), mint_link(tmp_path)
    links = tmp_path / LINKS_FILE
    assert links.stat().st_mode & 0o777 == 0o600
    stored = links.read_text()
    assert first not in stored  # only their digests
    assert second not in stored
    assert token.redeem(second)
    assert not token.redeem(second)
    assert token.redeem(first)
    assert token.redeem("banner")
    assert not token.redeem("banner")
    assert links.read_text() == ""

    elsewhere = tmp_path / "elsewhere"
    links.unlink()
    links.symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic links"):  # ELOOP: O_NOFOLLOW refused it
        mint_link(tmp_path)
    assert not elsewhere.exists()
    links.unlink()

    stale = mint_link(tmp_path, now=0)
    assert not token.redeem(stale)  # its lifetime ended long ago
    late = mint_link(tmp_path)
    assert not token.redeem(late, now=time.time() + LINK_LIFETIME_SECONDS + 1)


def _announce(data_dir: Path, receiver: str | None) -> None:
    """This test's process as the owner of ``data_dir``, the way a running ``inbox dev``
    announces itself (its pid in the lock file and in the state file)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "inbox.lock").write_text(str(os.getpid()))
    state = {"url": "postgresql://unused", "pid": os.getpid()}
    if receiver is not None:
        state["receiver"] = receiver
    (data_dir / "dev-server.json").write_text(json.dumps(state))


def _env(**env: str) -> dict[str, str]:
    """Another terminal's: none of the suite's settings; this checkout's ``inbox`` from any
    folder."""
    return environment(without=("INBOX_",), PYTHONPATH=str(REPO), **env)


def _link_command(folder: Path, **env: str) -> tuple[int, str, str]:
    done = run_inbox("console", "link", cwd=folder, env=_env(**env))
    return done.returncode, done.stdout, done.stderr


def test_link_needs_a_running_dev_and_uses_the_address_it_announced(tmp_path: Path) -> None:
    code, out, err = _link_command(tmp_path)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert "no `inbox dev` is running on .inbox/" in err

    _announce(tmp_path / ".inbox", "http://127.0.0.1:8123")
    code, out, err = _link_command(tmp_path)
    assert code == 0, err
    assert re.fullmatch(r"http://127\.0\.0\.1:8123/console/login/token/[\w-]{32}\n", out), out

    _announce(tmp_path / ".inbox", None)  # a dev that does not say: the settings' address
    code, out, err = _link_command(tmp_path, INBOX_RECEIVER__PORT="8124")
    assert code == 0, err
    assert out.startswith("http://127.0.0.1:8124/console/login/token/"), out
    assert len((tmp_path / ".inbox" / LINKS_FILE).read_text().splitlines()) == 2


# --- with a real `inbox dev` --------------------------------------------------------------


def _answers(url: str) -> bool:
    try:
        return httpx.get(url).is_success
    except httpx.TransportError:
        return False


@pytest.fixture
def project(server_dir: Path) -> Iterator[Path]:
    folder = server_dir / "project"
    folder.mkdir()
    yield folder
    for pid in postgres_serving(folder / ".inbox" / "pgdata"):  # however the test ended
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_inbox_dev_accepts_a_link_the_command_minted_once(project: Path) -> None:
    env = _env()
    dev = Dev(project, env)  # on a free port: the command finds it in the dev state file
    try:
        banner = dev.wait_for_banner()
        base = dev.receiver()
        assert _answers(f"{base}/healthz")  # the banner comes once it listens
        first = re.search(r"^  console +(http://\S+/login/token/\S+)", banner, re.MULTILINE)
        assert first is not None, banner
        command = re.search(r"another link: (.+ console link)$", banner, re.MULTILINE)
        assert command is not None, banner
        with httpx.Client() as browser:
            assert browser.get(first.group(1), follow_redirects=False).status_code == 303
        with httpx.Client() as browser:  # the banner's link again: a dead end no more
            used = browser.get(first.group(1))
        assert used.status_code == 403
        shown = html.escape(command.group(1), quote=False)
        assert f'<code id="new-link-command">{shown}</code>' in used.text
        assert f"<code>{project}</code>" in used.text

        minted = run_inbox("console", "link", cwd=project, env=env)
        assert minted.returncode == 0, minted.stderr
        link = minted.stdout.strip()
        assert link.startswith(f"{base}/console/login/token/")
        with httpx.Client() as browser:
            landed = browser.get(link, follow_redirects=False)
            assert landed.status_code == 303, landed.text
            overview = browser.get(f"{base}/console/")
            assert '<span id="whoami">dev' in overview.text
        with httpx.Client() as browser:
            assert browser.get(link).status_code == 403
    finally:
        assert dev.stop(signal.SIGTERM) == 0, dev.log()
    stopped = run_inbox("console", "link", cwd=project, env=env)
    assert stopped.returncode == 2
    assert "no `inbox dev` is running" in stopped.stderr
