"""Ordered keys under failure, with a real worker: a failing head holds its key while it is
retried; a dead head holds it (on_dead = "hold") until it is retried or skipped, or lets
it go on ("continue"); replays keep key order. Other keys are never held."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from inbox import InboxWriter
from inbox.queries import replay, retry_dead, skip_dead
from processors import Event, Router
from tests._wait import rows, scalar
from tests.operator._support import inbox
from tests.processors._support import run_worker_until, settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Poison(Exception):
    pass


def _write(url: str, plan: list[tuple[str, int]], on_dead: str = "hold") -> dict[str, int]:
    """(key, position) per event, written in the order given; returns ids by "key:pos"."""
    ids = {}
    with InboxWriter(url, notify="off") as writer:
        for key, n in plan:
            ids[f"{key}:{n}"] = writer.write(
                "ordered",
                f"{key}-{n}",
                json.dumps({"key": key, "n": n}).encode(),
                ordering_key=key,
                order_at=T0 + timedelta(seconds=n),
                on_dead=on_dead,
            ).event_id
    return ids


def _router(seen: list[str], poison: set[str], fail_first: frozenset[str] = frozenset()) -> Router:
    router = Router()

    @router.on("ordered")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        body = event.json()
        name = f"{body['key']}:{body['n']}"
        if name in poison or (name in fail_first and event.attempt == 1):
            raise Poison(name)
        seen.append(name)

    return router


def _run(url: str, router: Router, until: str, **overrides: Any) -> None:
    run_worker_until(
        url,
        router,
        lambda: scalar(url, until) == 0,
        worker_settings=settings(max_attempts=2, **overrides),
        what=until,
    )


# Nothing due but a retry waiting in the future, and the events behind it.
RUNNABLE_NOW = (
    "select count(*) from inbox_work w where state = 'pending' and run_at <= now()"
    " and not exists (select from inbox_work r where r.ordering_key = w.ordering_key"
    " and r.run_at > now())"
)
# Nothing left that may run: only held or dead rows remain.
RUNNABLE = (
    "select count(*) from inbox_work w where state = 'pending'"
    " and not exists (select from inbox_work d where d.state = 'dead'"
    " and d.on_dead = 'hold' and d.ordering_key = w.ordering_key)"
)


def test_a_failing_head_holds_its_followers_while_it_is_retried(db_url: str) -> None:
    _write(db_url, [("a", 3), ("a", 1), ("a", 2), ("b", 1), ("b", 2)])
    seen: list[str] = []
    _run(
        db_url,
        _router(seen, set(), fail_first=frozenset({"a:1"})),
        "select count(*) from inbox_work",
    )
    assert [s for s in seen if s.startswith("a")] == ["a:1", "a:2", "a:3"]
    assert [s for s in seen if s.startswith("b")] == ["b:1", "b:2"]


def test_a_poison_event_holds_its_key_only_until_it_is_skipped(db_url: str) -> None:
    ids = _write(db_url, [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2)])
    seen: list[str] = []
    router = _router(seen, {"a:2"})
    _run(db_url, router, RUNNABLE)
    assert seen.count("a:3") == 0
    assert sorted(seen) == ["a:1", "b:1", "b:2"]
    assert rows(db_url, "select event_id, state from inbox_work order by event_id") == [
        (ids["a:2"], "dead"),
        (ids["a:3"], "pending"),
    ]
    # The held key and its head are visible: in the status and in the events list.
    status = inbox(db_url, "status", "--json")
    held = json.loads(status.stdout)
    assert held["held"] == 1
    [head] = held["held_keys"]
    assert (head["ordering_key"], head["head_event_id"], head["reason"], head["waiting"]) == (
        "a",
        ids["a:2"],
        "dead letter",
        1,
    )
    assert "Poison: a:2" in head["last_error"]
    assert "held keys: 1" in inbox(db_url, "status").stdout
    listed = inbox(db_url, "events", "list", "--held")
    assert listed.returncode == 0, listed.stderr
    [line] = [row for row in listed.stdout.splitlines() if row.startswith("ordered")]
    assert line.split()[:5] == ["ordered", "a", str(ids["a:2"]), "dead", "letter"]
    # The operator skips the head (audited, with the reason); the key goes on.
    done = inbox(db_url, "dead", "skip", str(ids["a:2"]), str(ids["b:1"]), "--reason", "bad data")
    assert done.returncode == 0, done.stderr
    assert f"skipped 1 dead letter(s) ({ids['a:2']})" in done.stdout
    assert f"not dead letters, left alone: {ids['b:1']}" in done.stdout
    [audit] = rows(db_url, "select kind, reason, selected, queued, via from inbox_replays")
    assert audit == ("dead-skip", "bad data", 2, 1, "cli")
    [attempt] = rows(
        db_url,
        "select a.outcome, a.error_message, a.replay_id = r.id from inbox_attempts a"
        " join inbox_replays r on true where a.event_id = %s and a.outcome = 'skipped'",
        [ids["a:2"]],
    )
    assert attempt == ("skipped", "bad data", True)
    _run(db_url, router, "select count(*) from inbox_work")
    assert seen[-1] == "a:3"
    assert json.loads(inbox(db_url, "events", "list", "--held", "--json").stdout) == {
        "held_keys": []
    }


def test_skipping_needs_a_reason_and_dead_letters(db_url: str) -> None:
    from inbox import RefusedError

    with pytest.raises(RefusedError, match="reason"):
        skip_dead(db_url, ids=[1], reason=" ")
    result = skip_dead(db_url, ids=[12345], reason="none of these")
    assert (result.skip_id, result.skipped, result.left_alone) == (None, [], [12345])
    assert scalar(db_url, "select count(*) from inbox_replays") == 0
    missing = inbox(db_url, "dead", "skip", "--reason", "x")
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr


def test_a_retried_dead_head_runs_before_the_followers_it_held(db_url: str) -> None:
    ids = _write(db_url, [("a", 1), ("a", 2), ("a", 3)])
    seen: list[str] = []
    poison = {"a:1"}
    _run(db_url, _router(seen, poison), RUNNABLE)
    assert seen == []
    poison.clear()  # the fix is deployed
    retry_dead(db_url, reason="fixed", ids=[ids["a:1"]])
    _run(db_url, _router(seen, poison), "select count(*) from inbox_work")
    assert seen == ["a:1", "a:2", "a:3"]


def test_with_on_dead_continue_the_followers_go_on(db_url: str) -> None:
    ids = _write(db_url, [("a", 1), ("a", 2), ("a", 3)], on_dead="continue")
    seen: list[str] = []
    _run(db_url, _router(seen, {"a:2"}), "select count(*) from inbox_work where state = 'pending'")
    assert seen == ["a:1", "a:3"]
    assert rows(db_url, "select event_id, state from inbox_work") == [(ids["a:2"], "dead")]


def test_a_replay_keeps_key_order_and_waits_for_the_keys_live_events(db_url: str) -> None:
    ids = _write(db_url, [("a", 2), ("a", 1), ("b", 1)])
    seen: list[str] = []
    router = _router(seen, set())
    _run(db_url, router, "select count(*) from inbox_work")
    assert seen.index("a:1") < seen.index("a:2")
    seen.clear()
    _write(db_url, [("a", 9)])
    result = replay(db_url, reason="fix", ids=[ids["a:2"], ids["a:1"]], rate=1000.0)
    assert result.queued == 2
    _run(db_url, router, "select count(*) from inbox_work")
    # The live event first (replays never run ahead of it), then the replays in key order.
    assert seen == ["a:9", "a:1", "a:2"]
