"""`inbox serve` tunes the garbage collector of its own processes, and gives it back."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import uvicorn

from inbox._cli import receiver
from inbox._core.runtime.daemon import DAEMON_GC_THRESHOLDS


def test_serving_runs_with_the_receivers_thresholds_and_restores_the_previous_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int, int]] = []

    def run(self: uvicorn.Server, sockets: Any = None) -> None:
        seen.append(gc.get_threshold())

    monkeypatch.setattr(uvicorn.Server, "run", run)
    before = gc.get_threshold()
    assert before != DAEMON_GC_THRESHOLDS
    receiver._serve_on(uvicorn.Config(app=None))

    assert seen == [DAEMON_GC_THRESHOLDS]
    assert gc.get_threshold() == before
