"""The exported names are the documented contract (DESIGN.md); the layering holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import inbox

REPO = Path(__file__).resolve().parent.parent


def test_inbox_exports_are_the_documented_names_sorted() -> None:
    assert inbox.__all__ == sorted(inbox.__all__)
    documented = {"InboxWriter", "AsyncInboxWriter", "WriteResult", "InboxError"}
    assert documented <= set(inbox.__all__)
    for name in inbox.__all__:
        assert getattr(inbox, name) is not None


def test_every_inbox_error_is_rooted_in_inbox_error() -> None:
    errors = [getattr(inbox, n) for n in inbox.__all__ if n.endswith("Error")]
    assert all(issubclass(e, inbox.InboxError) for e in errors)


def test_inbox_never_imports_processors() -> None:
    """import-linter's contract (pyproject.toml): the writer embeds without the workers."""
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "inbox (the receiving side) never imports processors KEPT" in result.stdout
    # The rooms' layers and the sides that never meet (docs/architecture.md).
    assert "Contracts: 5 kept, 0 broken." in result.stdout


def test_operator_api_exports_are_sorted_and_present() -> None:
    import processors
    from inbox import queries

    for module in (queries, processors):
        # ruff's isort-style order (RUF022): constants, then classes, then functions.
        assert module.__all__ == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
        for name in module.__all__:
            assert getattr(module, name) is not None
    assert {"status", "events", "event", "event_ids", "prune", "EventFilter"} <= set(
        queries.__all__
    )
    assert {"Event", "Retry", "Router", "replay", "retry_dead"} <= set(processors.__all__)
