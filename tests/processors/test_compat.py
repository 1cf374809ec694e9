"""The worker without its hooks into psycopg and pydantic (processors/_compat.py): the same
results whether they are turned off, missing, or break at run time. (That they fit the
versions CI installs: tests/processors/test_pipeline_send.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from processors import _compat
from processors._running.pipeline_send import PipelineSend
from tests.processors.test_batch_handlers import (  # noqa: F401 (collected here again)
    test_a_failure_is_charged_to_its_own_event_and_the_rest_commit_once,
    test_each_source_gets_its_own_call_beside_per_event_and_sync_handlers,
)
from tests.processors.test_event import (  # noqa: F401 (collected here again)
    test_a_stored_event_equals_the_validated_event,
)

# (Not those that check the pipeline itself: without the hooks there is none.)
from tests.processors.test_pipeline import (  # noqa: F401 (collected here again)
    test_a_statement_larger_than_the_sockets_buffers_is_sent_whole_before_the_sync,
    test_retry_raised_after_writes_were_queued_undoes_them,
)
from tests.processors.test_worker import (  # noqa: F401 (collected here again)
    test_async_handler_writes_commit_with_the_settle,
    test_sync_handler_gets_a_sync_connection_in_the_same_transaction,
)


@pytest.fixture(autouse=True, params=["off", "broken"])
def hooks_off(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every test here runs with the hooks turned off, and with the pipeline hook failing at
    run time as a psycopg it does not fit would make it."""
    _compat.reset()
    if request.param == "off":
        monkeypatch.setenv(_compat.HOOKS_ENV, "off")
        monkeypatch.setattr(_compat, "_event_slots_missing", lambda: "forced off by the test")
    else:

        def start(self: PipelineSend) -> None:
            raise AttributeError("'AsyncPipeline' object has no attribute '_communicate_gen'")

        monkeypatch.setattr(PipelineSend, "start", start)
    yield request.param
    _compat.reset()


def test_a_hook_that_breaks_at_run_time_is_turned_off_once(
    hooks_off: str, db_url: str, worker_url: str
) -> None:
    from tests.processors.test_worker import test_async_handler_writes_commit_with_the_settle as t

    with capture_logs() as logs:
        t(db_url, worker_url)
    off = [e for e in logs if e["event"] == "psycopg_hooks_off"]
    assert _compat.hooks().pipeline is False
    if hooks_off == "broken":
        [line] = off
        assert "_communicate_gen" in str(line["reasons"])
    else:
        assert all("INBOX_PSYCOPG_HOOKS" in str(e["reasons"]) for e in off)
