"""The worker through PgBouncer in transaction mode.

The worker's own tests run again here through the pooler (in the test's process, and as
real ``inbox worker`` processes); beside them, with real processes: its claims, handlers and
settles go through the pooler, its LISTEN connection to ``listen_url``, directly, so a
notification wakes it as fast as without a pooler. Without ``listen_url`` it polls and says
so once. What it sets for its transactions stays there, and ``inbox status`` behind the
pooler says when it cannot see the workers.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from inbox import InboxWriter
from tests._commands import environment, run_inbox
from tests._pgbouncer import SESSION_SETTINGS, PgBouncer, current_settings
from tests._roles import Roles, part_url
from tests._wait import rows, scalar, wait_for
from tests.processors._procs import WorkerProcess
from tests.processors._support import create_business_table
from tests.processors.test_faults import (
    assert_each_effect_exactly_once,
    queue_is_empty,
    running_listeners,
)
from tests.processors.test_worker import (  # noqa: F401 (collected here again)
    test_a_handler_that_writes_then_raises_leaves_no_business_row,
    test_async_handler_writes_commit_with_the_settle,
    test_event_fields_reach_the_handler,
    test_failures_back_off_then_dead_letter_after_max_attempts,
    test_retry_after_reschedules_without_counting_a_failure,
    test_sync_and_async_handlers_sharing_a_session_never_clash_over_prepared_statements,
    test_sync_handler_deadline_cancels_its_query,
    test_sync_handler_gets_a_sync_connection_in_the_same_transaction,
)

SETTINGS_APP = "tests.pooler.settings_app:router"
# Longer than any test here: an event handled sooner was found by a notification.
NO_POLL = {"INBOX_WORKER__POLL_INTERVAL_SECONDS": "300"}
# How soon a notified worker must have handled an event (the poll would take 300 s).
WOKEN_WITHIN_SECONDS = 5.0
BURST = 300


def write_orders(url: str, numbers: range) -> None:
    """Orders ``numbers`` written through ``url`` (the pooler: no prepared statements), each
    committed with its notification, as a receiver behind the pooler writes them."""
    with InboxWriter(url, pooler="transaction") as writer:
        for n in numbers:
            writer.write("shop", f"key-{n}", f'{{"n": {n}}}'.encode(), event_type="order.paid")


def paid(db_url: str) -> int:
    return int(scalar(db_url, "select count(*) from payments"))


def test_a_pooled_worker_with_a_direct_listener_is_woken_by_each_notification(
    db_url: str,
    worker_url: str,
    receiver_url: str,
    tmp_path: Path,
    workers: list[WorkerProcess],
) -> None:
    create_business_table(db_url)
    worker = WorkerProcess(worker_url, tmp_path, 0, app=SETTINGS_APP, **NO_POLL)
    workers.append(worker)
    wait_for(lambda: running_listeners(db_url) == 1, timeout=60, what="the worker's listener")
    # Idle now, listening: one event at a time, each must be handled well before a poll.
    for n in range(5):
        written = time.monotonic()
        write_orders(receiver_url, range(n, n + 1))
        wait_for(lambda n=n: paid(db_url) == n + 1, timeout=60, what=f"event {n} handled")
        took = time.monotonic() - written
        assert took < WOKEN_WITHIN_SECONDS, f"event {n} waited {took:.1f} s: not woken"
    # Then a burst, drained as fast as the notifications come.
    write_orders(receiver_url, range(5, 5 + BURST))
    wait_for(lambda: queue_is_empty(db_url), timeout=60, what="the burst to drain")
    assert worker.terminate() == 0, worker.output()
    assert_each_effect_exactly_once(db_url, 5 + BURST)
    assert "Traceback" not in worker.output()


def test_a_pooled_worker_without_listen_url_polls_and_says_so_once(
    db_url: str,
    worker_url: str,
    tmp_path: Path,
    workers: list[WorkerProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("INBOX_DATABASE__LISTEN_URL")
    create_business_table(db_url)
    worker = WorkerProcess(worker_url, tmp_path, 0, app=SETTINGS_APP)  # polls every 0.5 s
    workers.append(worker)
    write_orders(db_url, range(50))
    wait_for(lambda: queue_is_empty(db_url), timeout=60, what="the poll to drain the events")
    # It never listened, neither directly nor through the pooler.
    assert running_listeners(db_url) == 0
    assert worker.terminate() == 0, worker.output()
    assert_each_effect_exactly_once(db_url, 50)
    lines = [json.loads(line) for line in worker.output().splitlines() if line.startswith("{")]
    said = [line for line in lines if "listen_url" in json.dumps(line)]
    assert len(said) == 1, said
    assert "poll" in json.dumps(said[0]), said[0]


def test_the_workers_settings_stay_in_its_transactions(
    db_url: str,
    worker_url: str,
    tmp_path: Path,
    workers: list[WorkerProcess],
    pgbouncer: PgBouncer,
    direct_worker_url: str,
) -> None:
    with psycopg.connect(direct_worker_url) as conn:
        defaults = current_settings(conn, SESSION_SETTINGS)
    create_business_table(db_url)
    workers.append(WorkerProcess(worker_url, tmp_path, 0, app=SETTINGS_APP))
    write_orders(db_url, range(100))
    wait_for(lambda: queue_is_empty(db_url), timeout=60, what="the events to drain")
    assert workers[0].terminate() == 0, workers[0].output()
    # Inside its transactions, the worker's statement timeout was in force...
    [(in_force,)] = rows(db_url, "select distinct note from payments")
    assert in_force != defaults["statement_timeout"]
    # ...and no server connection of the pool keeps any of its settings for the next client.
    assert pgbouncer.settings_left(worker_url, defaults) == []


def test_status_behind_the_pooler_never_calls_unseen_workers_healthy(
    db_url: str,
    worker_url: str,
    tmp_path: Path,
    workers: list[WorkerProcess],
    pgbouncer: PgBouncer,
    least_roles: Roles | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    operator = pgbouncer.pooled(part_url(db_url, least_roles, "operator"))

    def status(*args: str) -> str:
        env = environment(INBOX_DATABASE__URL=operator, NO_COLOR="1")
        result = run_inbox("status", *args, env=env, timeout=60)
        assert result.returncode in (0, 2), result.stderr
        return result.stdout

    # No worker runs: behind the pooler as anywhere, that is not "healthy".
    alone = status()
    assert alone.splitlines()[0] != "pg-inbox status: healthy", alone
    assert "no worker" in alone, alone
    # A worker behind the pooler without listen_url: it polls. Once it is seen, so is its
    # missing listener.
    monkeypatch.delenv("INBOX_DATABASE__LISTEN_URL")
    workers.append(WorkerProcess(worker_url, tmp_path, 0, app=SETTINGS_APP))

    def report() -> dict[str, Any]:
        return dict(json.loads(status("--json")))

    wait_for(lambda: report()["workers"]["processes"] == 1, timeout=60, what="the worker seen")
    seen = report()
    assert seen["workers"]["listeners"] == 0, seen
    assert any("listener" in warning for warning in seen["warnings"]), seen
