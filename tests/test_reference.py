"""The API reference (mkdocs.yml, docs/reference/): one page per public package, built with
warnings as errors, and every name it shows has a docstring to show."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "docs" / "reference"
PUBLIC = [
    "inbox",
    "inbox.queries",
    "inbox.testing",
    "inbox.console",
    "processors",
    "processors.testing",
]
NO_DOCS_EXTRA = "the docs extra is not installed: pip install -e '.[docs]'"


def test_each_public_package_has_its_page() -> None:
    rendered = [
        match
        for page in sorted(PAGES.glob("*.md"))
        for match in re.findall(r"^::: ([\w.]+)$", page.read_text(), flags=re.MULTILINE)
    ]
    assert sorted(rendered) == sorted(PUBLIC)


def test_the_reference_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason=NO_DOCS_EXTRA)
    pytest.importorskip("mkdocstrings_handlers.python", reason=NO_DOCS_EXTRA)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    inbox_page = (tmp_path / "inbox" / "index.html").read_text()
    assert 'id="inbox.InboxWriter.write"' in inbox_page  # inherited from the writers' base


def _target(obj: Any) -> Any:
    return obj.final_target if obj.is_alias else obj


def _undocumented(module: Any) -> list[str]:
    """The names the reference shows for ``module`` that have no docstring: its exports, and
    their public methods (a field of a record is shown by its type alone)."""
    missing = []
    for name in module.exports or ():
        target = _target(module[name])
        if not target.docstring:
            missing.append(f"{module.path}.{name}")
        if target.is_class:
            missing += [
                f"{module.path}.{name}.{member_name}"
                for member_name, member in target.all_members.items()
                if not member_name.startswith("_")
                and _target(member).is_function
                and not _target(member).docstring
            ]
    return missing


def test_every_name_the_reference_shows_has_a_docstring() -> None:
    griffe = pytest.importorskip("griffe", reason=NO_DOCS_EXTRA)
    loader = griffe.GriffeLoader(search_paths=[str(REPO)])
    packages = {name: loader.load(name) for name in ("inbox", "processors")}
    loader.resolve_aliases(implicit=False, external=False)
    missing = []
    for path in PUBLIC:
        package, _, submodule = path.partition(".")
        module = packages[package][submodule] if submodule else packages[package]
        missing += _undocumented(module)
    assert not missing, "no docstring: " + ", ".join(missing)
