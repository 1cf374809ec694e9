"""The exported names are the documented contract (the README); the layering holds."""

from __future__ import annotations

import inspect
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
    assert "Contracts: 7 kept, 0 broken." in result.stdout


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
    assert {"Event", "Retry", "Router", "Worker", "WorkerSettings"} <= set(processors.__all__)


def test_each_name_is_exported_by_one_package() -> None:
    import processors
    from inbox import queries

    replays = {"replay", "retry_dead", "replay_runs", "ReplayResult", "ReplayRun"}
    assert replays <= set(queries.__all__)
    for module in (inbox, processors):
        assert not replays & set(module.__all__)
    # Code that took them from processors before still finds them: the same objects.
    for name in replays:
        assert getattr(processors, name) is getattr(queries, name)
    assert queries.replay.__module__ != "processors"
    assert set(inbox.__all__).isdisjoint(processors.__all__)


def test_what_users_type_against_is_exported() -> None:
    import processors

    assert {"Receiver", "ReceiverResponse", "ReceivingSource", "PendingWrite"} <= set(inbox.__all__)
    assert {"Worker", "WorkerSettings", "WorkerMetrics"} <= set(processors.__all__)


def _loaded_in_a_fresh_interpreter(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_exported_classes_and_functions_report_their_package_as_their_module() -> None:
    import processors

    for package in (inbox, processors):
        for name in package.__all__:
            value = getattr(package, name)  # loads a lazily exported name
            if inspect.isclass(value) or inspect.isfunction(value):
                assert value.__module__ == package.__name__, f"{package.__name__}.{name}"
    assert processors.Router.__module__ == "processors"
    # A lazily loaded name is claimed when it loads, before any other code sees it.
    code = "import inbox; print(inbox.create_app.__module__, inbox.Receiver.__module__)"
    assert _loaded_in_a_fresh_interpreter(code) == "inbox inbox"


def test_processing_errors_are_inbox_errors_and_exported() -> None:
    import processors

    processing = {"HandlerTimeoutError", "HandlerLeftTransactionAbortedError", "NoRouteError"}
    processing |= {"CommitOutcomeUnknownError", "ProcessingError"}
    assert processing <= set(processors.__all__)
    for name in processing:
        error = getattr(processors, name)
        assert issubclass(error, processors.ProcessingError)
        assert issubclass(error, inbox.InboxError)
    # Every exception class the processing side defines is one of the exported errors,
    # except the handler's request to retry and the batch runner's private signal.
    defined = {
        obj
        for module_name, module in sys.modules.items()
        if module_name.startswith("processors.")
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__.startswith("processors")
    }
    assert {e.__name__ for e in defined} == processing | {"Retry", "_Undo"}
    assert not issubclass(processors.Retry, inbox.InboxError)


def test_both_packages_ship_py_typed() -> None:
    import processors

    for package in (inbox, processors):
        assert package.__file__ is not None
        assert (Path(package.__file__).parent / "py.typed").is_file()
