"""Replay semantics: processed events re-run flagged as replay, queued once, dry runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from inbox import RefusedError
from inbox.queries import EventFilter, replay, replay_runs, retry_dead
from processors import Event, Router
from tests._wait import rows, scalar
from tests.operator._support import create_effects, inbox
from tests.processors._support import (
    run_until_empty,
    run_until_settled,
    settings,
    write_events,
)


def _router(seen: list[tuple[int, bool, int | None]]) -> Router:
    router = Router()

    @router.on("shop")
    async def paid(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        seen.append((event.id, event.is_replay, event.replay_id))
        await conn.execute(
            "insert into effects (event_id, n, is_replay, replay_id, handler)"
            " values (%s, %s, %s, %s, 'test')",
            [event.id, event.json()["n"], event.is_replay, event.replay_id],
        )

    return router


def _drain(url: str, router: Router) -> None:
    run_until_empty(url, router)


def _settled_once(url: str, count: int, *, fails: Callable[[int], bool]) -> list[int]:
    """``count`` events, each run once (``max_attempts = 1``): those whose ``n`` ``fails``
    picks are dead letters, the others processed."""
    create_effects(url)
    ids = write_events(url, count)
    router = Router()

    @router.on("shop")
    async def handler(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        if fails(event.json()["n"]):
            raise RuntimeError("downstream said no")

    run_until_settled(url, router, worker_settings=settings(max_attempts=1))
    return ids


def test_processed_events_are_rerun_once_each_and_flagged_as_replay(db_url: str) -> None:
    create_effects(db_url)
    ids = write_events(db_url, 20)
    seen: list[tuple[int, bool, int | None]] = []
    _drain(db_url, _router(seen))
    assert all(not is_replay for _, is_replay, _ in seen)

    # The handler was wrong, not failing: replay what it processed, for one type only.
    write_events(db_url, 5, source="other")
    result = replay(
        db_url,
        reason="amounts were rounded wrong",
        event_filter=EventFilter(source="shop", type="order.*", states=("processed",)),
        actor="alice@ops",
    )
    assert (result.selected, result.queued, result.already_pending) == (20, 20, 0)
    assert result.replay_id is not None
    assert scalar(db_url, "select count(*) from inbox_work where priority = 1") == 20

    seen.clear()
    _drain(db_url, _router(seen))
    assert sorted(event_id for event_id, _, _ in seen if event_id in ids) == sorted(ids)
    assert all(is_replay and rid == result.replay_id for i, is_replay, rid in seen if i in ids)
    assert scalar(db_url, "select count(*) from inbox_attempts where replay_id is not null") == 20
    [run] = replay_runs(db_url)
    assert (run.kind, run.created_by, run.reason, run.selected, run.queued) == (
        "replay",
        "alice@ops",
        "amounts were rounded wrong",
        20,
        20,
    )
    assert run.filter == {"source": "shop", "type": "order.*", "states": ["processed"]}
    # The log itself never changed.
    assert scalar(db_url, "select count(*) from inbox_events") == 25


def test_replaying_twice_before_the_workers_run_queues_each_event_once(db_url: str) -> None:
    create_effects(db_url)
    ids = write_events(db_url, 10)
    _drain(db_url, _router([]))

    first = replay(db_url, reason="first", ids=ids)
    second = replay(db_url, reason="again", ids=ids)
    assert (first.queued, first.already_pending) == (10, 0)
    assert (second.queued, second.already_pending) == (0, 10)
    assert scalar(db_url, "select count(*) from inbox_work") == 10
    assert scalar(db_url, "select array_agg(distinct replay_id) from inbox_work") == [
        first.replay_id
    ]
    assert [r.queued for r in replay_runs(db_url)] == [0, 10]  # both runs are on record

    seen: list[tuple[int, bool, int | None]] = []
    _drain(db_url, _router(seen))
    assert sorted(i for i, _, _ in seen) == sorted(ids)  # once each, not twice


def test_a_dry_run_changes_nothing(db_url: str) -> None:
    create_effects(db_url)
    ids = write_events(db_url, 30)
    _drain(db_url, _router([]))
    replay(db_url, reason="earlier run", ids=ids[:3])  # some pending work to compare

    def snapshot() -> list[Any]:
        return [
            rows(db_url, "select * from inbox_work order by event_id"),
            rows(db_url, "select * from inbox_replays order by id"),
            scalar(db_url, "select count(*) from inbox_attempts"),
            scalar(db_url, "select last_value from inbox_replays_id_seq"),
        ]

    before = snapshot()
    result = inbox(
        db_url, "replay", "--state", "processed", "--reason", "look", "--dry-run", "--json"
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["dry_run"] is True
    assert out["replay_id"] is None
    assert (out["selected"], out["queued"], out["already_pending"]) == (27, 27, 0)
    assert len(out["sample"]) == 10
    api = replay(db_url, reason="look", event_filter=EventFilter(), dry_run=True)
    assert (api.selected, api.queued, api.already_pending) == (30, 27, 3)
    assert snapshot() == before


def test_the_command_line_asks_above_100_events_and_needs_a_reason(db_url: str) -> None:
    write_events(db_url, 101)
    refused = inbox(db_url, "replay", "--all", "--reason", "big")
    assert refused.returncode == 2
    assert "pass --yes" in refused.stderr
    no_reason = inbox(db_url, "replay", "--all")
    assert no_reason.returncode == 2
    assert "--reason" in no_reason.stderr
    nothing = inbox(db_url, "replay", "--reason", "what?")
    assert nothing.returncode == 2
    assert "ids or filters" in nothing.stderr
    assert scalar(db_url, "select count(*) from inbox_replays") == 0
    # 100 or fewer go ahead without asking (these already have pending work: queued 0).
    small = inbox(db_url, "replay", "--source", "shop", "--key", "key-7", "--reason", "one")
    assert small.returncode == 0, small.stderr
    assert "queued 0 of 1" in small.stdout


def test_the_api_refuses_a_replay_without_reason_or_selection(db_url: str) -> None:
    with pytest.raises(RefusedError, match="reason"):
        replay(db_url, reason=" ", ids=[1])
    with pytest.raises(RefusedError, match="ids or a filter"):
        replay(db_url, reason="why")


def test_dead_letters_are_listed_and_retried_with_a_rate(db_url: str) -> None:
    ids = _settled_once(db_url, 6, fails=lambda n: True)
    listed = inbox(db_url, "dead", "list", "--json", "--error", "DOWNSTREAM")
    assert listed.returncode == 0, listed.stderr
    dead = json.loads(listed.stdout)["events"]
    assert sorted(e["id"] for e in dead) == sorted(ids)
    assert {e["state"] for e in dead} == {"dead"}
    assert "RuntimeError: downstream said no" in dead[0]["last_error"]

    result = retry_dead(db_url, reason="downstream is back", ids=ids[:4], rate=2.0)
    assert result.queued == 4
    spread = rows(
        db_url,
        "select extract(epoch from max(run_at) - min(run_at)) from inbox_work"
        " where state = 'pending'",
    )
    assert spread == [(pytest.approx(1.5, abs=0.01),)]  # 4 events at 2/s
    assert scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 2
    [run] = replay_runs(db_url)
    assert (run.kind, run.rate_per_second) == ("dead-retry", 2.0)
    assert run.filter["states"] == ["dead"]


def test_replaying_processed_events_says_so_and_needs_include_processed(db_url: str) -> None:
    ids = _settled_once(db_url, 6, fails=lambda n: n % 2 == 1)
    assert scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 3

    dry = inbox(db_url, "replay", "--all", "--reason", "recompute", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert (json.loads(dry.stdout)["selected"], json.loads(dry.stdout)["already_processed"]) == (
        6,
        3,
    )
    shown = inbox(db_url, "replay", "--all", "--reason", "recompute", "--dry-run")
    assert "3 of them were processed successfully before" in shown.stdout
    assert "--include-processed" in shown.stdout

    refused = inbox(db_url, "replay", "--all", "--reason", "recompute")
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr
    [line] = refused.stderr.splitlines()
    assert "3 of the 6 selected events were processed successfully before" in line
    assert "--include-processed" in line
    assert "replay-safe" in line
    assert scalar(db_url, "select count(*) from inbox_replays") == 0
    assert scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 0

    # The dead letters alone were never processed: no flag needed.
    dead = inbox(db_url, "replay", "--state", "dead", "--reason", "fixed", "--json")
    assert dead.returncode == 0, dead.stderr
    assert (json.loads(dead.stdout)["queued"], json.loads(dead.stdout)["already_processed"]) == (
        3,
        0,
    )
    with pytest.raises(RefusedError, match="include_processed=True"):
        replay(db_url, reason="api", ids=ids, include_processed=False)
    assert replay(db_url, reason="api", ids=ids, dry_run=True).already_processed == 3
    every = inbox(db_url, "replay", *map(str, ids), "--reason", "recompute", "--include-processed")
    assert every.returncode == 0, every.stderr
    assert "queued 3 of 6" in every.stdout  # the dead ones already have pending work
    assert "3 of them were processed successfully before" in every.stdout
    assert scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 6
