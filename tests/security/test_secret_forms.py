"""Passwords in connection strings of every form stay masked, in `inbox config check`'s report
and in libpq's own error text; key and secrets files open to others are warned about, once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from inbox._core.config import secrets
from inbox._core.config.masking import mask_password
from inbox._core.config.sections import ConsoleSettings
from inbox._core.config.sources import SourceSettings

SECRET = "TOP SECRET13"

# A password of every shape libpq may quote back, in every form a connection string takes.
# (the connection string, what of the password must never show)
FORMS = {
    "a URL, a space": ("postgresql://u:TOP SECRET13@host/db", ["TOP", "SECRET13"]),
    "a URL, an @": ("postgresql://u:p@ss word13@host/db", ["ss word13", "p@ss"]),
    "a URL, a /": ("postgresql://u:sec/ret13@host/db", ["sec", "ret13"]),
    "a URL, a quote": ('postgresql://u:TOP"SE CRET13@host/db', ["TOP", "SE CRET13"]),
    "a URL, a bad escape": ("postgresql://u:TOP%2SECRET13@host/db", ["TOP%2", "SECRET13"]),
    "a URL's query": ("postgresql://u@host/db?password=TOP%20SECRET13", ["TOP%20SECRET13"]),
    "key=value, quoted": ("host=h user=u password='TOP SECRET13'", ["TOP", "SECRET13"]),
    "key=value, an escape": (r"host=h password = 'it\'s SECRET13' user=u", ["it\\'s", "SECRET13"]),
    "key=value, unquoted": ("host=h password=TOP SECRET13 user=u", ["TOP", "SECRET13"]),
    "key=value, unterminated": ("host=h password='TOP SECRET13", ["TOP", "SECRET13"]),
    "sslpassword": ("host=h sslpassword=TOP_SECRET13", ["TOP_SECRET13"]),
}


def _config_check(url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_")}
    return subprocess.run(
        [sys.executable, "-m", "inbox", "config", "check"],
        cwd=tmp_path,
        env={**clean, "INBOX_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# The command's two ways (its report, a refused value); every form is tested below, in-process.
IN_A_PROCESS = ["a URL, a space", "a URL, an @", "key=value, an escape", "key=value, unquoted"]


@pytest.mark.parametrize("form", IN_A_PROCESS)
def test_config_check_masks_every_form_of_password(form: str, tmp_path: Path) -> None:
    url, hidden = FORMS[form]
    result = _config_check(url, tmp_path)
    output = result.stdout + result.stderr
    assert "database.url" in output, output  # reported, or refused naming the field
    for needle in hidden:
        assert needle not in output, f"{needle!r} shows in: {output}"
    assert "***" in output


@pytest.mark.parametrize("form", FORMS)
def test_mask_password_with_the_conninfo_masks_libpqs_quotes(form: str) -> None:
    url, hidden = FORMS[form]
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        message = mask_password(f"{exc} in {url}", url)
    else:
        message = mask_password(url, url)
    for needle in hidden:
        assert needle not in message, message


def test_mask_password_leaves_text_without_a_password_alone() -> None:
    text = 'connection to server at "db.internal" (10.0.0.5), port 5432 failed: timeout'
    assert mask_password(text) == text
    assert mask_password("postgresql://app@db:5432/inbox") == "postgresql://app@db:5432/inbox"


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_WARNED", set())


@pytest.mark.usefixtures("fresh_warnings")
@pytest.mark.parametrize(
    ("mode", "warned"),
    [
        (0o600, False),
        (0o400, False),
        (0o640, os.geteuid() != 0),  # the group may read a file root owns, as in PostgreSQL
        (0o660, True),
        (0o644, True),
        (0o604, True),
    ],
)
def test_a_secrets_file_open_to_others_is_warned_about_once(
    tmp_path: Path, mode: int, warned: bool
) -> None:
    path = tmp_path / "stripe.secrets"
    path.write_text("whsec_abc\n")
    path.chmod(mode)
    source = SourceSettings(name="stripe", verifier="stripe", secrets_file=path)
    with capture_logs() as logs:
        assert source.secret_values() == ["whsec_abc"]
        assert source.secret_values() == ["whsec_abc"]  # read again: no second line
    lines = [e for e in logs if e["event"] == "secret_file_readable_by_others"]
    assert len(lines) == (1 if warned else 0), logs
    if warned:
        assert lines[0]["path"] == str(path)
        assert lines[0]["mode"] == f"{mode:04o}"
        assert lines[0]["setting"] == "sources.stripe.secrets_file"
        assert "chmod 600" in lines[0]["fix"]
        assert "whsec_abc" not in str(lines[0])


@pytest.mark.usefixtures("fresh_warnings")
def test_a_console_key_file_open_to_others_is_warned_about_through_its_link(
    tmp_path: Path,
) -> None:
    target = tmp_path / "..data" / "secret_key"  # as Kubernetes mounts a secret: a link
    target.parent.mkdir()
    target.write_text("k" * 40)
    target.chmod(0o644)
    link = tmp_path / "secret_key"
    link.symlink_to(target)
    console = ConsoleSettings(secret_key_file=link)
    with capture_logs() as logs:
        assert console.secret_key_value() == "k" * 40
    [line] = [e for e in logs if e["event"] == "secret_file_readable_by_others"]
    assert line["setting"] == "console.secret_key_file"
    assert line["mode"] == "0644"


def test_config_check_warns_in_one_line_for_a_readable_secrets_file(tmp_path: Path) -> None:
    path = tmp_path / "sw.secrets"
    path.write_text("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n")
    path.chmod(0o644)
    (tmp_path / "inbox.toml").write_text(
        f'[[sources]]\nname = "sw"\nverifier = "standard-webhooks"\nsecrets_file = "{path}"\n'
    )
    result = _config_check("postgresql://u@127.0.0.1:1/none", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = [x for x in result.stderr.splitlines() if "secret_file_readable_by_others" in x]
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0]
    assert "MfKQ9r8" not in result.stdout + result.stderr
