"""Fault tests: real worker processes, killed and restarted, against a real PostgreSQL.

Every scenario ends with the same check: each event's business effect happened exactly once.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from inbox import InboxWriter
from tests._pg import restartable_database
from tests._wait import rows, scalar, wait_for
from tests.processors._procs import QUICK_POLL, WorkerProcess
from tests.processors._support import create_business_table

pytestmark = pytest.mark.slow


def write_orders(
    url: str,
    count: int,
    *,
    refunds_too: bool = False,
    notify: bool = False,
    batched: bool = False,
) -> None:
    """Orders paid (an async handler); with ``refunds_too`` every other one is a refund (a
    sync handler), so both kinds of handler run under the fault; with ``batched`` they go to
    batch handlers (async and sync) instead. Without ``notify`` the workers find them by
    their poll.

    Orders that arrive while workers run (``notify``) commit one by one. Without it they are
    a backlog the workers start on, and they commit together: one commit instead of one an
    event, which is most of the writing's time."""
    paid, refunded = (
        ("order.batched", "order.batched_refund") if batched else ("order.paid", "order.refunded")
    )
    with contextlib.ExitStack() as stack:
        writer = stack.enter_context(InboxWriter(url, notify="after_commit" if notify else "off"))
        backlog = None if notify else stack.enter_context(psycopg.connect(url))
        for n in range(count):
            event_type = refunded if refunds_too and n % 2 else paid
            body = f'{{"n": {n}}}'.encode()
            writer.write("shop", f"key-{n}", body, event_type=event_type, conn=backlog)


def queue_is_empty(url: str) -> bool:
    return scalar(url, "select count(*) from inbox_work where state = 'pending'") == 0


def assert_each_effect_exactly_once(url: str, count: int) -> None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            """
            select (select count(*) from payments),
                   (select count(distinct event_id) from payments),
                   (select count(*) from inbox_events),
                   (select count(*) from inbox_work),
                   (select count(distinct event_id) from inbox_attempts
                     where outcome = 'processed')
            """
        ).fetchone()
        duplicated = conn.execute(
            "select event_id, count(*) from payments group by 1 having count(*) > 1 limit 5"
        ).fetchall()
    assert duplicated == [], f"effects applied twice: {duplicated}"
    assert row == (count, count, count, 0, count)


def kill_mid_batch(url: str, victim: WorkerProcess) -> None:
    """SIGKILL ``victim`` while it holds a batch: its claim counters are committed before
    its handlers run and deleted when the batch commits, so they mark a batch in flight."""
    wait_for(
        lambda: (
            scalar(
                url,
                "select count(*) from inbox_claims where last_worker like %s",
                [f"%:{victim.pid}/%"],
            )
            > 0
        ),
        timeout=60,
        what=f"worker {victim.pid} to hold a batch",
    )
    victim.kill()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.close()


def running_listeners(url: str) -> int:
    return int(
        scalar(
            url,
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and application_name like 'pg-inbox listener%%'",
        )
    )


def test_three_worker_processes_share_the_backlog_exactly_once(
    db_url: str, worker_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    create_business_table(db_url)
    workers.extend(
        WorkerProcess(worker_url, tmp_path, n, FAULT_HANDLER_SLEEP_MS="2") for n in range(3)
    )
    # All three are up and idle before the work arrives, so they compete for it from the
    # first batch (a process that started late could otherwise find nothing left).
    wait_for(lambda: running_listeners(db_url) == 3, timeout=120, what="three workers up")
    write_orders(db_url, 2000, notify=True)
    wait_for(lambda: queue_is_empty(db_url), timeout=120, what="the backlog to drain")
    for worker in workers:
        assert worker.terminate() == 0, worker.output()
    assert_each_effect_exactly_once(db_url, 2000)
    # Every process took part: SKIP LOCKED shared the work rather than serialising it.
    pids = scalar(db_url, "select count(distinct note) from payments")
    assert pids == 3


@pytest.mark.parametrize(
    ("savepoints", "handlers", "tracing"),
    [
        ("batch", "mixed", ""),
        ("event", "mixed", ""),
        ("batch", "pipelined", ""),
        ("batch", "mixed", "1"),
        ("batch", "batched", ""),
    ],
    ids=["batch-mixed", "event-mixed", "batch-pipelined", "batch-mixed-traced", "batch-batched"],
)
def test_sigkill_mid_handler_never_applies_an_effect_twice(
    db_url: str,
    worker_url: str,
    tmp_path: Path,
    workers: list[WorkerProcess],
    savepoints: str,
    handlers: str,
    tracing: str,
) -> None:
    create_business_table(db_url)
    # "mixed": async and sync handlers alternate (the batch's pipeline closes before each
    # sync one); "pipelined": async handlers only, each reading its write back, so a whole
    # batch shares one pipeline that syncs mid-batch, and the kills land inside it;
    # "batched": async and sync batch handlers, each call writing its events together.
    write_orders(db_url, 2000, refunds_too=handlers != "pipelined", batched=handlers == "batched")
    # Some handlers fail their first attempt after writing, so the kills also land on
    # batches being undone and re-run (savepoints = "batch") or rolled back per event.
    slow = {
        **QUICK_POLL,
        "FAULT_HANDLER_SLEEP_MS": "20",
        "FAULT_FAIL_FIRST_EVERY": "25",
        "INBOX_WORKER__SAVEPOINTS": savepoints,
        "INBOX_WORKER__BACKOFF_BASE_SECONDS": "0.05",
        "INBOX_WORKER__BACKOFF_MAX_SECONDS": "0.2",
        "FAULT_TRACING": tracing,
    }
    if handlers == "pipelined":
        slow["FAULT_READ_BACK"] = "1"
    workers.extend(WorkerProcess(worker_url, tmp_path, n, **slow) for n in range(3))
    rng = random.Random(7)
    kills = 0
    while kills < 12:
        kill_mid_batch(db_url, rng.choice([w for w in workers if w.alive()]))
        kills += 1
        workers.append(WorkerProcess(worker_url, tmp_path, len(workers), **slow))
    assert not queue_is_empty(db_url), "the backlog drained before the kills were done"
    wait_for(lambda: queue_is_empty(db_url), timeout=240, what="the backlog to drain")
    for worker in workers:
        if worker.alive():
            assert worker.terminate() == 0, worker.output()
    assert_each_effect_exactly_once(db_url, 2000)
    assert scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 0
    with psycopg.connect(db_url) as conn:
        failures = conn.execute(
            "select error_class, count(distinct event_id) from inbox_attempts"
            " where outcome = 'failed' group by 1"
        ).fetchall()
    assert failures == [("FirstAttemptFailed", 2000 // 25)]


@pytest.mark.parametrize("batched", [False, True], ids=["handler", "batch-handler"])
def test_a_poison_pill_is_dead_lettered_as_crashed_and_the_rest_processed(
    db_url: str, worker_url: str, tmp_path: Path, workers: list[WorkerProcess], batched: bool
) -> None:
    # A batch handler's poison kills the call that holds the whole batch: every event of it
    # becomes a suspect, and each suspect runs alone, so only the poison dies again.
    create_business_table(db_url)
    write_orders(db_url, 60, batched=batched)
    env = {"FAULT_POISON_KEY": "key-7", "INBOX_WORKER__MAX_CRASHES": "3"}

    def poison_is_dead() -> bool:
        if not workers[-1].alive():
            workers.append(WorkerProcess(worker_url, tmp_path, len(workers), **env))
        return scalar(
            db_url, "select count(*) from inbox_attempts where outcome = 'crashed'"
        ) == 1 and queue_is_empty(db_url)

    workers.append(WorkerProcess(worker_url, tmp_path, 0, **env))
    wait_for(poison_is_dead, timeout=180, what="the poison pill to be dead-lettered")
    dead = rows(
        db_url,
        "select e.idempotency_key, w.state, a.error_message"
        " from inbox_work w join inbox_events e on e.id = w.event_id"
        " join inbox_attempts a on a.event_id = w.event_id and a.outcome = 'crashed'",
    )
    processed = scalar(db_url, "select count(*) from payments")
    assert len(dead) == 1
    key, state, message = dead[0]
    assert (key, state) == ("key-7", "dead")
    assert "claimed 3 times by workers that died" in message
    assert processed == 59
    assert sum(1 for w in workers if w.process.returncode == -9) == 3


def test_sigterm_mid_batch_exits_zero_and_commits_the_batch_whole(
    db_url: str, worker_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    create_business_table(db_url)
    write_orders(db_url, 300)
    worker = WorkerProcess(worker_url, tmp_path, 0, FAULT_HANDLER_SLEEP_MS="30")
    workers.append(worker)
    wait_for(
        lambda: scalar(db_url, "select count(*) from inbox_claims") > 0,
        timeout=60,
        what="a batch in flight",
    )
    assert worker.terminate(timeout=60) == 0, worker.output()
    with psycopg.connect(db_url) as conn:
        paid = conn.execute("select count(*) from payments").fetchone()
        settled = conn.execute(
            "select count(*) from inbox_attempts where outcome = 'processed'"
        ).fetchone()
        left = conn.execute("select count(*) from inbox_work").fetchone()
        claims = conn.execute("select count(*) from inbox_claims").fetchone()
    assert paid == settled  # every effect has its settle, and no settle lacks its effect
    assert paid is not None
    assert left is not None
    assert paid[0] + left[0] == 300
    assert claims == (0,)  # events the batch had not started were released, not crashed
    assert "worker_stopped" in worker.output()


def test_postgres_crash_and_restart_mid_run_loses_nothing_and_repeats_nothing(
    tmp_path: Path, server_dir: Path, workers: list[WorkerProcess]
) -> None:
    with restartable_database(server_dir, "crashy") as (server, url):
        try:
            create_business_table(url)
            write_orders(url, 1500)
            workers.extend(
                WorkerProcess(url, tmp_path, n, FAULT_HANDLER_SLEEP_MS="5") for n in range(2)
            )
            wait_for(
                lambda: (
                    scalar(
                        url,
                        "select count(*) from pg_stat_activity where datname = current_database()"
                        " and application_name like 'pg-inbox listener%%'",
                    )
                    == 2
                ),
                timeout=120,
                what="both workers running",
            )
            wait_for(
                lambda: scalar(url, "select count(*) from payments") >= 200,
                timeout=120,
                what="processing under way",
            )
            server.crash()
            server.restart()
            wait_for(lambda: queue_is_empty(url), timeout=180, what="the backlog to drain")
            for worker in workers:
                assert worker.alive(), worker.output()
                assert worker.terminate() == 0, worker.output()
            assert_each_effect_exactly_once(url, 1500)
            assert any("worker_connection_lost" in w.output() for w in workers)
        finally:
            for worker in workers:
                worker.close()


def test_a_replay_that_requires_a_version_runs_once_on_it_through_sigkills(
    db_url: str, worker_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    """A rolling deploy: a worker of the old code keeps running beside workers of the fix,
    which are killed mid-handler again and again. The replay runs on the fix only, and each
    of its effects happens exactly once."""
    from inbox.queries import EventFilter, replay

    create_business_table(db_url)
    write_orders(db_url, 600, refunds_too=True)
    old = {**QUICK_POLL, "INBOX_APP__VERSION": "old", "FAULT_HANDLER_SLEEP_MS": "5"}
    workers.append(WorkerProcess(worker_url, tmp_path, 0, **old))
    wait_for(lambda: queue_is_empty(db_url), timeout=120, what="the first run")
    with psycopg.connect(db_url) as conn:
        conn.execute("truncate payments")  # the business rows the replay must make again
    result = replay(db_url, reason="the fix", event_filter=EventFilter(), require_version="fixed")
    assert result.queued == 600
    fixed = {**QUICK_POLL, "INBOX_APP__VERSION": "fixed", "FAULT_HANDLER_SLEEP_MS": "20"}
    workers.extend(WorkerProcess(worker_url, tmp_path, n, **fixed) for n in (1, 2))
    rng = random.Random(11)
    for kill in range(6):
        kill_mid_batch(db_url, rng.choice([w for w in workers[1:] if w.alive()]))
        workers.append(WorkerProcess(worker_url, tmp_path, 3 + kill, **fixed))
    assert not queue_is_empty(db_url), "the replay drained before the kills were done"
    wait_for(lambda: queue_is_empty(db_url), timeout=240, what="the replay to drain")
    for worker in workers:
        if worker.alive():
            assert worker.terminate() == 0, worker.output()
    assert_each_effect_exactly_once(db_url, 600)
    notes = {n for (n,) in rows(db_url, "select distinct note from payments")}
    assert str(workers[0].pid) not in notes  # the old code ran none of the replay
    replayed = rows(
        db_url,
        "select distinct version from inbox_attempts where replay_id = %s",
        [result.replay_id],
    )
    assert replayed == [("fixed",)]


def test_a_prune_while_events_arrive_and_drain_loses_nothing_and_doubles_nothing(
    db_url: str, worker_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    """Old partitions are dropped while a writer appends and two workers drain: the new
    events each take effect once, the old ones are gone whole, and nobody meets an error."""
    import subprocess
    import sys
    import threading

    from tests._log import seed_events

    create_business_table(db_url)
    with psycopg.connect(db_url) as conn:  # three old weeks, settled: prunable
        seed_events(
            conn,
            "select 'old' as source, 'old-' || g as idempotency_key,"
            " now() - make_interval(days => 120 + g %% 21) as received_at"
            " from generate_series(1, 600) g",
        )
    workers.extend(
        WorkerProcess(worker_url, tmp_path, n, FAULT_HANDLER_SLEEP_MS="2") for n in range(2)
    )
    wait_for(lambda: running_listeners(db_url) == 2, timeout=120, what="two workers up")
    writing = threading.Thread(target=write_orders, args=(db_url, 1500), kwargs={"notify": True})
    writing.start()
    prunes = []
    while writing.is_alive() or len(prunes) < 2:
        prunes.append(
            subprocess.run(
                [sys.executable, "-m", "inbox", "prune", "--older-than", "90d", "--yes", "--json"],
                env={**os.environ, "INBOX_DATABASE__URL": db_url},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        )
    writing.join()
    assert all(p.returncode == 0 for p in prunes), [p.stderr for p in prunes]
    wait_for(lambda: queue_is_empty(db_url), timeout=120, what="the backlog to drain")
    for worker in workers:
        assert worker.terminate() == 0, worker.output()
        assert "error" not in worker.output().lower(), worker.output()
    assert_each_effect_exactly_once(db_url, 1500)
    assert scalar(db_url, "select count(*) from inbox_events where source = 'old'") == 0
    dropped = scalar(db_url, "select sum(jsonb_array_length(partitions_dropped)) from inbox_prunes")
    assert dropped >= 3
