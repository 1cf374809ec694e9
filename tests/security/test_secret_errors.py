"""A settings error never echoes a secret: not when the secret has the wrong type or shape
(pydantic's errors carry the value given), not from a bad secrets file, in no output of
`inbox config check` or `inbox serve` (real processes), nor in a ValidationError's text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from inbox import Settings, load_settings
from inbox._core.errors import ConfigError

SECRET = "whsec_" + "bmV2ZXItc2hvd24tc2VjcmV0LTAxMjM0NTY3"
NUMBER = 73950264181  # a secret that TOML reads as a number
PASSWORD = "plain-password-never-shown-97"  # given where its hash belongs

# `inbox serve` wants a database URL before it reads the sources (it never gets to connect).
DATABASE = '[database]\nurl = "postgresql://nobody@127.0.0.1:1/none"\n'
SOURCE = '[[sources]]\nname = "sw"\nverifier = "standard-webhooks"\n'

# (what is wrong, the file's text, the field the error must name)
BAD = {
    "one string for the list": (f'{SOURCE}secrets = "{SECRET}"\n', "sources.0.secrets"),
    "a number in the list": (f'{SOURCE}secrets = ["{SECRET}", {NUMBER}]\n', "sources.0.secrets.1"),
    "a table for the list": (f'{SOURCE}secrets = {{ a = "{SECRET}" }}\n', "sources.0.secrets"),
    "a number as private_key": (f"{SOURCE}private_key = {NUMBER}\n", "sources.0.private_key"),
    "a password for its hash": (
        f'[[console.users]]\nname = "olga"\npassword_hash = "{PASSWORD}"\n',
        "console.users.0.password_hash",
    ),
    "a number as secret_key": (f"[console]\nsecret_key = {NUMBER}\n", "console.secret_key"),
}
NEEDLES = [SECRET, SECRET.removeprefix("whsec_"), str(NUMBER), PASSWORD]


def _inbox(config: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_")}
    return subprocess.run(
        [sys.executable, "-m", "inbox", "--config", str(config), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _assert_refused_without_a_secret(result: subprocess.CompletedProcess[str], field: str) -> None:
    output = result.stdout + result.stderr
    for needle in NEEDLES:
        assert needle not in output, f"a secret appears in the output: {output}"
    assert result.returncode == 2, output
    [line] = result.stderr.strip().splitlines()  # one line, no traceback
    assert f"{field} = <redacted>: " in line


@pytest.mark.parametrize("command", [["config", "check"], ["serve", "--port", "1"]])
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_secret_of_the_wrong_shape_is_named_never_shown(
    tmp_path: Path, case: str, command: list[str]
) -> None:
    text, field = BAD[case]
    config = tmp_path / "inbox.toml"
    config.write_text(DATABASE + text)
    result = _inbox(config, *command)
    _assert_refused_without_a_secret(result, field)
    assert f"invalid configuration in {config}" in result.stderr


def test_a_secret_of_the_wrong_shape_in_an_environment_variable_is_not_shown(
    tmp_path: Path,
) -> None:
    config = tmp_path / "inbox.toml"
    config.write_text(DATABASE)
    sources = [{"name": "sw", "verifier": "standard-webhooks", "secrets": SECRET}]
    result = _inbox(config, "serve", "--port", "1", INBOX_SOURCES=json.dumps(sources))
    _assert_refused_without_a_secret(result, "sources.0.secrets")
    assert "environment variable INBOX_SOURCES" in result.stderr


@pytest.mark.parametrize("command", [["config", "check"], ["serve", "--port", "1"]])
def test_a_bad_secrets_file_is_named_its_contents_never_shown(
    tmp_path: Path, command: list[str]
) -> None:
    secrets = tmp_path / "sw.secrets"
    config = tmp_path / "inbox.toml"
    config.write_text(f'{DATABASE}{SOURCE}secrets_file = "{secrets}"\n')
    for contents, said in [
        (f"{SECRET}!not-base64\n".encode(), "standard-webhooks secret must be base64"),
        (SECRET.encode() + b"\xff\xfe\n", f"secrets_file {secrets} is not UTF-8 text"),
    ]:
        secrets.write_bytes(contents)
        secrets.chmod(0o600)  # private, as it should be: one line, the error's
        result = _inbox(config, *command)
        output = result.stdout + result.stderr
        assert SECRET.removeprefix("whsec_") not in output, output
        assert result.returncode == 2, output
        [line] = result.stderr.strip().splitlines()
        assert said in line


def test_a_validation_errors_own_text_holds_no_value(tmp_path: Path) -> None:
    # A host app that logs the exception (its traceback prints the cause's text too).
    with pytest.raises(ValidationError) as direct:
        Settings(sources=[{"name": "sw", "verifier": "standard-webhooks", "secrets": SECRET}])
    config = tmp_path / "inbox.toml"
    config.write_text(BAD["a number in the list"][0])
    with pytest.raises(ConfigError) as loaded:
        load_settings(config)
    texts = [str(direct.value), str(loaded.value), str(loaded.value.__cause__)]
    for text in texts:
        assert SECRET not in text
        assert str(NUMBER) not in text
    assert "sources.0.secrets.1" in str(loaded.value)
