"""Secrets from mounted files, and no configured secret in any output: log lines, errors,
/metrics, `inbox status --json`, the console's pages, `inbox config check`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from inbox import create_app, queries
from inbox.console import create_app as console_app
from inbox.console._passwords import hash_password
from tests.receiver.conftest import signed

SW_FILE_SECRET = "whsec_" + "c2VjcmV0LWZyb20tYS1maWxlLTAxMjM0NTY3"
SW_OLD_SECRET = "whsec_" + "b2xkLXNlY3JldC1mcm9tLWEtZmlsZS0wMTIz"
GH_SECRET = "github-inline-secret-never-shown-42"
ENV_SECRET = "slack-env-secret-never-shown-4242"
CONSOLE_KEY = "console-session-key-never-shown-0123456789"
SECRETS = [SW_FILE_SECRET, SW_OLD_SECRET, GH_SECRET, ENV_SECRET, CONSOLE_KEY]
# Also the encoded forms a verifier might print.
NEEDLES = [*SECRETS, *(s.removeprefix("whsec_") for s in SECRETS)]


def _assert_no_secret(text: str, where: str) -> None:
    for needle in NEEDLES:
        assert needle not in text, f"a secret appears in {where}"


@pytest.fixture
def project(tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    secrets = tmp_path / "sw.secrets"
    secrets.write_text(f"# rotated 2026-11\n{SW_FILE_SECRET}\n\n  {SW_OLD_SECRET} ,\n")
    monkeypatch.setenv("SLACK_SIGNING", ENV_SECRET)
    password_hash = hash_password("operator-password", n=2**10)
    (tmp_path / "inbox.toml").write_text(
        f"""
[database]
url = "{db_url}"

[[sources]]
name = "sw"
verifier = "standard-webhooks"
secrets_file = "{secrets}"

[[sources]]
name = "gh"
verifier = "github"
secrets = ["{GH_SECRET}"]

[[sources]]
name = "slack"
verifier = "slack"
secrets_env = "SLACK_SIGNING"

[console]
enabled = true
secret_key = "{CONSOLE_KEY}"
users = [{{ name = "olga", role = "operator", password_hash = "{password_hash}" }}]
"""
    )
    return tmp_path


def _inbox(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inbox", "--config", str(project / "inbox.toml"), *args],
        env={k: v for k, v in os.environ.items() if not k.startswith("INBOX_")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_secrets_file_holds_one_per_line_or_comma_separated(project: Path) -> None:
    from inbox import load_settings

    settings = load_settings(project / "inbox.toml")
    sw = settings.source("sw")
    assert sw is not None
    assert sw.secret_values() == [SW_FILE_SECRET, SW_OLD_SECRET]


def test_a_missing_secrets_file_is_one_line_naming_the_file(project: Path) -> None:
    (project / "sw.secrets").unlink()
    result = _inbox(project, "config", "check")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert f"cannot read secrets_file {project / 'sw.secrets'}" in line


def test_config_check_redacts_every_secret_and_says_where_values_came_from(
    project: Path,
) -> None:
    result = _inbox(project, "config", "check")
    assert result.returncode == 0, result.stderr
    _assert_no_secret(result.stdout + result.stderr, "inbox config check")
    out = result.stdout
    assert re.search(r"sources\.gh\.secrets = \[\"<redacted>\"\]  \[.*inbox\.toml\]", out)
    assert re.search(r"console\.secret_key = \"<redacted>\"", out)
    assert "sources.sw: 2 active secret(s)" in out
    assert "sources.slack: 1 active secret(s)" in out
    assert re.search(r"worker\.max_attempts = \d+  \[default\]", out)
    assert f'sources.sw.secrets_file = "{project / "sw.secrets"}"  [{project}' in out


def test_a_secret_that_does_not_verify_is_refused_without_showing_it(project: Path) -> None:
    malformed = "whsec_not!base64-never-shown-0123"
    (project / "sw.secrets").write_text(malformed + "\n")
    result = _inbox(project, "config", "check")
    assert result.returncode == 2
    assert "source 'sw'" in result.stderr
    assert malformed not in result.stderr
    assert "not!base64-never-shown" not in result.stderr


def test_no_secret_in_logs_errors_metrics_status_or_console(project: Path, db_url: str) -> None:
    from inbox import load_settings

    settings = load_settings(project / "inbox.toml")
    seen: list[str] = []
    with capture_logs() as logs, TestClient(create_app(settings)) as client:
        good = signed(settings, "sw")
        seen.append(client.post("/webhooks/sw", content=good.body, headers=good.headers).text)
        seen.append(client.post("/webhooks/sw", content=good.body, headers=good.headers).text)
        forged = {**good.headers, "webhook-signature": "v1,AAAA"}
        bad = client.post("/webhooks/sw", content=good.body, headers=forged)
        assert bad.status_code == 401
        seen.append(bad.text)
        gh = signed(settings, "gh")
        seen.append(client.post("/webhooks/gh", content=gh.body, headers=gh.headers).text)
        wrong = {**gh.headers, "x-hub-signature-256": "sha256=00"}
        seen.append(client.post("/webhooks/gh", content=b"{}", headers=wrong).text)
        metrics = client.get("/metrics")
        assert metrics.status_code == 200
        seen.append(metrics.text)
    assert any(entry.get("event") for entry in logs)
    _assert_no_secret(json.dumps(logs, default=str), "the log lines")
    _assert_no_secret("\n".join(seen), "the receiver's responses and /metrics")

    status = _inbox(project, "status", "--json")
    assert status.returncode == 0, status.stderr
    _assert_no_secret(status.stdout + status.stderr, "inbox status --json")
    _assert_no_secret(json.dumps(queries.status(db_url).to_json(), default=str), "status")

    with TestClient(console_app(settings, dsn=db_url), base_url="http://console.test") as web:
        login = web.get("/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', login.text)
        assert csrf
        signed_in = web.post(
            "/login",
            data={"username": "olga", "password": "operator-password", "csrf": csrf.group(1)},
            follow_redirects=False,
        )
        assert signed_in.status_code == 303
        pages = {"/"}
        home = web.get("/")
        pages |= {
            href
            for href in re.findall(r'href="(/[^"#?]*)', home.text)
            if not href.startswith(("/static", "/logout"))
        }
        texts = [login.text]
        for page in sorted(pages)[:40]:
            response = web.get(page)
            texts.append(response.text)
        assert len(texts) > 3
    _assert_no_secret("\n".join(texts), "the console's pages")
