"""``inbox providers`` and docs/providers.md say what the records say: the command prints
every scheme, and the docs' one table is the one ``inbox providers --markdown`` generates."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from inbox._cli.main import main
from inbox._providers import SCHEMES, provider
from inbox._providers._catalog import TABLE_BEGIN, TABLE_END, catalog, markdown_table
from inbox._providers._provider import FAMILIES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "providers.md"


@pytest.fixture(autouse=True)
def _no_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # main() would configure logging onto this test's captured stderr (test_cli_no_database).
    monkeypatch.setattr("inbox._cli.main.configure_logging", lambda **_kwargs: None)
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("INBOX_"):
            monkeypatch.delenv(name)


def test_the_docs_table_is_the_generated_one() -> None:
    text = DOCS.read_text()
    start, end = text.index(TABLE_BEGIN), text.index(TABLE_END) + len(TABLE_END) + 1
    assert text[start:end] == markdown_table(), (
        "docs/providers.md is stale: put the output of `inbox providers --markdown` in place"
        " of its table"
    )


def test_the_table_lists_every_scheme_once_by_kind_then_name() -> None:
    lines = markdown_table().splitlines()
    assert lines[2].startswith("| kind | verifier |")
    rows = [line.split(" | ")[:2] for line in lines[4:-2]]
    pairs = [(kind.removeprefix("| "), name.strip("`")) for kind, name in rows]
    assert sorted(name for _, name in pairs) == list(SCHEMES)
    assert all(kind == FAMILIES[provider(name).about.family] for kind, name in pairs)
    order = list(FAMILIES.values())
    assert pairs == sorted(pairs, key=lambda pair: (order.index(pair[0]), pair[1]))


def test_json_lists_every_scheme_with_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["providers", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == catalog()
    assert [e["verifier"] for e in printed] == list(SCHEMES)
    for entry in printed:
        for field in ("signs", "unsigned", "key_from"):
            assert entry[field], (entry["verifier"], field)
        assert entry["proof"] in ("sdk-both-ways", "sdk-verifies", "vectors", "docs-only", "n/a")


def test_the_table_for_a_person(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:2] == ["VERIFIER", "PROVIDER"]
    for scheme in SCHEMES:
        assert f"\n{scheme} " in out


def test_markdown_prints_the_docs_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["providers", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown_table()
