"""The benchmarks can be repeated on another machine: the peers are pinned, the peers'
interpreter is found from the checkout or named, and no report names this machine's paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import _common, _peers, processing, run_all
from benchmarks._report import FIGURES, AllResults, Section, document

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"


def _pins() -> dict[str, str]:
    pins = {}
    for line in _peers.PEERS_REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[re.sub(r"\[.*\]", "", name)] = version
    return pins


def test_peers_txt_pins_exactly_the_versions_the_committed_results_name() -> None:
    measured = re.search(r"peers \([^)]*\): (.+)", RESULTS.read_text(encoding="utf-8"))
    assert measured is not None
    named = dict(part.split(" ") for part in measured.group(1).split(", "))
    assert named == _pins()
    assert set(named) == set(_peers.PEER_DISTRIBUTIONS)


def test_the_committed_results_name_no_path_of_the_machine_they_ran_on() -> None:
    text = RESULTS.read_text(encoding="utf-8")
    absolute_paths = re.findall(r"(?:^|[\s(`])(/[A-Za-z][\w.-]*/\S*)", text, flags=re.MULTILINE)
    assert absolute_paths == []
    assert "site-packages" not in text
    assert "PYTHONPATH" not in text
    commands = re.findall(r"^`(.+)`$", text, flags=re.MULTILINE)
    # At most one per figure, each repeatable from the repository's root by a driver that
    # `all` runs (the test below: a regenerated report has exactly one per figure).
    assert 0 < len(commands) <= len(FIGURES)
    assert all(c.startswith("python -m benchmarks ") for c in commands)
    assert {c.split()[3] for c in commands} <= {"processing", *run_all.DRIVERS}


def test_all_runs_every_figure_from_the_command_its_section_prints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("INBOX_BENCH_DATABASE_URL", raising=False)
    for quick in ([], ["--quick"]):
        args = run_all.parse_args(quick)
        assert args.selected == list(FIGURES)
        argv = run_all.figure_argv(args)
        assert list(argv) == list(FIGURES)
        for name, *rest in argv.values():
            driver = processing if name == "processing" else run_all.DRIVERS[name]
            driver.parse_args(rest)  # the driver takes the command its section prints
    full = run_all.figure_argv(run_all.parse_args([]))
    assert full["throughput"][full["throughput"].index("--backlog") + 1] == "100000"
    assert run_all.parse_args(["--skip", "receiver-rss,backlog"]).selected == [
        key for key in FIGURES if key not in ("receiver-rss", "backlog")
    ]
    results = AllResults(["- facts"])
    for key, line in full.items():
        command = _common.command_line("benchmarks", line)
        results.sections[key] = Section(command, error="Traceback\nRuntimeError: no server\n")
    text = document(results, chart=None, analysis="## What limits pg-inbox\n\nProse.")
    sections = re.findall(r"^## (\w+)\. (.+)\n\n`(.+)`$", text, flags=re.MULTILINE)
    assert [number for number, _, _ in sections] == [figure.number for figure in FIGURES.values()]
    assert [command for _, _, command in sections] == [
        _common.command_line("benchmarks", line) for line in full.values()
    ]
    assert text.count("**FAILED**") == len(FIGURES)
    assert text.rstrip().endswith("Prose.")


def test_a_report_writes_its_command_relative_to_the_repository(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("INBOX_BENCH_DATABASE_URL", raising=False)
    out = REPO / "benchmarks" / "out" / "x.md"
    command = _common.command_line("benchmarks", ["all", "--quick", "--out", str(out)])
    assert command == "python -m benchmarks all --quick --out benchmarks/out/x.md"
    monkeypatch.setenv("INBOX_BENCH_DATABASE_URL", "postgresql://bench:secret@db.example/x")
    command = _common.command_line("benchmarks.storm", ["--runs", "1"])
    assert command == "INBOX_BENCH_DATABASE_URL=... python -m benchmarks.storm --runs 1"


def test_the_peers_interpreter_comes_from_the_variable_or_the_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(_peers.PEERS_ENV_VAR, "/opt/peers/bin/python")
    assert _peers.default_peers_python() == "/opt/peers/bin/python"
    assert _peers.peers_label("/opt/peers/bin/python") == _peers.PEERS_ENV_VAR

    monkeypatch.delenv(_peers.PEERS_ENV_VAR)
    monkeypatch.setattr(_peers, "PEERS_VENV", tmp_path / ".peers-venv")
    assert _peers.default_peers_python() is None  # not made: the peers are left out
    python = _peers.venv_python(tmp_path / ".peers-venv")
    python.parent.mkdir(parents=True)
    python.touch()
    assert _peers.default_peers_python() == str(python)

    in_checkout = _peers.venv_python(REPO / "benchmarks" / ".peers-venv")
    assert _peers.peers_label(str(in_checkout)) == "benchmarks/.peers-venv/bin/python"
    assert _peers.peers_label("/somewhere/else/python") == "--peers-python"
    assert _peers.peers_label(None) == "none"
