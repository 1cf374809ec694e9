"""The worker's liveness and readiness, judged from the state its loops record: I/O-free."""

from __future__ import annotations

from processors._worker.health import WorkerHealth, stuck_after_seconds
from tests.processors._support import settings


def running(concurrency: int = 2, *, listening: bool = True) -> WorkerHealth:
    health = WorkerHealth(settings(handler_timeout_seconds=10.0), concurrency=concurrency)
    health.started(100.0, listening=listening)
    for loop in range(concurrency):
        health.step(loop, 100.0)
        health.connected(loop, True)
    health.listener_up = listening
    return health


def test_a_starting_worker_is_alive_and_not_ready() -> None:
    health = WorkerHealth(settings(), concurrency=1)
    assert health.liveness(1e9).ok
    assert health.readiness(0.0).status == "starting"


def test_a_database_outage_makes_it_unready_and_leaves_it_alive() -> None:
    health = running()
    assert health.readiness(101.0).ok
    health.connected(1, False)
    health.listener_up = False
    health.step(1, 101.0)  # the loop backs off and tries again
    verdict = health.readiness(101.5)
    assert (verdict.status, verdict.checks["database"], verdict.checks["listener"]) == (
        "unavailable",
        False,
        "down",
    )
    assert health.liveness(101.5).ok
    health.connected(1, True)
    health.listener_up = True
    assert health.readiness(102.0).ok


def test_a_polling_worker_needs_no_listener() -> None:
    health = running(listening=False)
    verdict = health.readiness(101.0)
    assert verdict.ok
    assert verdict.checks["listener"] == "polling"


def test_draining_fails_readiness_at_once_and_not_liveness() -> None:
    health = running()
    health.draining = True
    assert health.readiness(100.0).status == "draining"
    assert health.liveness(100.0).ok


def test_a_claim_loop_stuck_in_one_step_or_a_stalled_loop_fails_liveness() -> None:
    health = running()
    limit = stuck_after_seconds(settings(handler_timeout_seconds=10.0))
    assert limit == 4 * 10.0 + 30.0 + 60.0
    health.tick(100.0 + limit)
    health.step(0, 100.0 + limit)
    verdict = health.liveness(100.0 + limit + 1)
    assert (verdict.ok, verdict.checks["stuck_claim_loops"]) == (False, [1])

    stalled = running()
    assert stalled.liveness(100.0 + 15.0).ok
    assert not stalled.liveness(100.0 + 15.1).ok  # handler_timeout_seconds + 5 s


def test_a_loop_that_has_ended_is_no_longer_watched() -> None:
    health = running()
    health.left(1)
    health.tick(1000.0)
    health.step(0, 1000.0)
    assert health.liveness(1000.5).ok
