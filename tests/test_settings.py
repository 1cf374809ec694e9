"""Settings: environment over TOML, and errors that name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from inbox import ConfigError, load_settings

REPO = Path(__file__).resolve().parent.parent


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inbox.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_example_config_is_valid() -> None:
    settings = load_settings(REPO / "config" / "inbox.toml")
    assert settings.database.url is None  # the example runs on the embedded PostgreSQL
    assert {s.name for s in settings.sources} >= {"stripe", "github"}


def test_toml_values_are_read(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
        [database]
        url = "postgresql://db/inbox"
        [worker]
        max_attempts = 7
        [[sources]]
        name = "stripe"
        verifier = "stripe"
        secrets = ["whsec_a", "whsec_b"]
        """,
    )
    settings = load_settings(path)
    assert settings.database.url == "postgresql://db/inbox"
    assert settings.worker.max_attempts == 7
    stripe = settings.source("stripe")
    assert stripe is not None
    assert stripe.secret_values() == ["whsec_a", "whsec_b"]


def test_environment_overrides_the_file_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "[worker]\nmax_attempts = 7\nbatch_size = 10\n")
    monkeypatch.setenv("INBOX_WORKER__MAX_ATTEMPTS", "3")
    monkeypatch.setenv("INBOX_DATABASE__URL", "postgresql://env/inbox")
    settings = load_settings(path)
    assert settings.worker.max_attempts == 3
    assert settings.worker.batch_size == 10
    assert settings.database.url == "postgresql://env/inbox"


def test_inbox_config_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "[worker]\nbatch_size = 3\n")
    monkeypatch.setenv("INBOX_CONFIG", str(path))
    assert load_settings().worker.batch_size == 3


def test_secrets_env_reads_rotating_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(
        tmp_path,
        '[[sources]]\nname = "gh"\nverifier = "github"\nsecrets_env = "GH_SECRETS"\n',
    )
    monkeypatch.setenv("GH_SECRETS", "old, new")
    source = load_settings(path).source("gh")
    assert source is not None
    assert source.secret_values() == ["old", "new"]


def test_a_bad_value_names_the_file_the_field_and_what_was_expected(tmp_path: Path) -> None:
    path = _write(tmp_path, '[worker]\nmax_attempts = "lots"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert info.value.path == str(path)
    assert info.value.field == "worker.max_attempts"
    assert str(path) in str(info.value)
    assert "worker.max_attempts" in str(info.value)
    assert "valid integer" in str(info.value)


def test_an_unknown_verifier_lists_the_known_ones(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[sources]]\nname = "x"\nverifier = "strype"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert info.value.field == "sources.0.verifier"
    assert "'stripe'" in str(info.value)
    assert "strype" in str(info.value)


def test_an_unknown_key_is_an_error_not_ignored(tmp_path: Path) -> None:
    path = _write(tmp_path, "[worker]\nmax_attemps = 3\n")
    with pytest.raises(ConfigError, match=r"worker\.max_attemps"):
        load_settings(path)


def test_repeated_source_names_are_refused(tmp_path: Path) -> None:
    text = '[[sources]]\nname = "a"\nverifier = "none"\n' * 2
    with pytest.raises(ConfigError, match="repeated: a"):
        load_settings(_write(tmp_path, text))


def test_broken_toml_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[worker\n")
    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_settings(path)
    assert info.value.path == str(path)


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.toml")


def test_without_any_file_the_defaults_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INBOX_CONFIG", raising=False)
    settings = load_settings()
    assert settings.worker.max_attempts == 25
    assert settings.sources == []


def test_inbox_database_url_is_the_database_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, '[database]\nurl = "postgresql://file/inbox"\n')
    monkeypatch.setenv("INBOX_DATABASE_URL", "postgresql://conventional/inbox")
    assert load_settings(path).database.url == "postgresql://conventional/inbox"
    monkeypatch.setenv("INBOX_DATABASE__URL", "postgresql://nested/inbox")
    assert load_settings(path).database.url == "postgresql://nested/inbox"
