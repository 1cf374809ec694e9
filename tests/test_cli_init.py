"""`inbox init`: a project that starts right, and never overwrites one."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from inbox._cli.main import main
from inbox._core.config.settings import load_settings
from inbox._core.runtime.extras import install_command
from tests._commands import REPO, environment, run_python

GENERATED = ["inbox.toml", "handlers.py", "schema/001_tables.sql", "test_handlers.py"]


@pytest.fixture(autouse=True)
def _keep_logging_unconfigured(monkeypatch: pytest.MonkeyPatch) -> None:
    # main() in this process would configure structlog globally onto this test's captured
    # stderr, which later tests' loggers would then write to after it is closed.
    monkeypatch.setattr("inbox._cli.main.configure_logging", lambda **_kwargs: None)


def test_init_writes_a_project_whose_settings_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("INBOX_CONFIG", raising=False)
    assert main(["init", str(tmp_path), "--provider", "stripe,github,standard-webhooks"]) == 0
    for name in GENERATED:
        assert (tmp_path / name).is_file(), name
    settings = load_settings(tmp_path / "inbox.toml")
    assert [(s.name, s.verifier, s.secrets_env) for s in settings.sources] == [
        ("stripe", "stripe", "STRIPE_WEBHOOK_SECRET"),
        ("github", "github", "GITHUB_WEBHOOK_SECRET"),
        ("webhooks", "standard-webhooks", "WEBHOOKS_WEBHOOK_SECRET"),
    ]
    assert settings.app.router == "handlers:router"
    assert settings.app.tables == [Path("schema")]
    assert "on conflict (event_id)" in (tmp_path / "handlers.py").read_text()


def test_init_changes_nothing_where_a_project_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "inbox.toml").write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{tmp_path / 'inbox.toml'} exists already" in err
    assert "--force" in err
    assert (tmp_path / "inbox.toml").read_text() == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox.toml"]

    assert main(["init", str(tmp_path), "--force"]) == 0
    assert "[[sources]]" in (tmp_path / "inbox.toml").read_text()


def test_an_unknown_provider_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["init", str(tmp_path), "--provider", "stripe,paypal"])
    assert exit_info.value.code == 2
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("providers", ["stripe", "github,slack"])
def test_the_generated_test_passes_as_written(
    tmp_path: Path, providers: str, pg_server: str
) -> None:
    assert main(["init", str(tmp_path), "--provider", providers]) == 0
    done = run_python(
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_handlers.py"),
        cwd=tmp_path,
        env=environment(without=("INBOX_",), INBOX_TEST_DATABASE_URL=pg_server),
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_init_says_how_to_run_the_generated_test_and_what_it_needs(tmp_path: Path) -> None:
    # Where pytest is missing (sys.modules[name] = None makes an import fail, as in a
    # project that never installed it), init names the extra that brings it, as this
    # pg-inbox was installed (a checkout or a wheel: the index has no pg-inbox to offer).
    init = f"from inbox._cli.main import main; sys.exit(main(['init', {str(tmp_path)!r}]))"
    done = run_python(
        "-c",
        f"import sys; sys.modules['pytest'] = None; {init}",
        env=environment(without=("INBOX_",)),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == [
        f"next: cd {tmp_path} && inbox dev",
        "test: python -m pytest   (runs test_handlers.py;"
        f" it needs pytest: {install_command('test')})",
    ]
    assert install_command("test").endswith("[test]'")
    assert "pytest" in (tmp_path / "test_handlers.py").read_text().split('"""')[1]


def test_the_test_extra_brings_what_the_generated_test_imports() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert {r.split(">")[0] for r in extras["test"]} == {"pg-inbox[embedded]", "pytest"}
    assert not any(r.startswith("pytest") for r in extras["all"])  # not in production images


def test_init_where_pytest_is_installed_says_only_how_to_run_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "test: python -m pytest   (runs test_handlers.py)"
    )
