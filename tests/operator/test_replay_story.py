"""The bug-fix story, end to end with real worker processes and the command line."""

from __future__ import annotations

import json

import pytest

from tests._wait import rows, scalar, wait_for
from tests.operator._support import create_effects, inbox, workers
from tests.processors._support import write_events

pytestmark = pytest.mark.slow


def test_dead_letters_of_a_bug_are_replayed_once_after_the_fix(db_url: str) -> None:
    create_effects(db_url)
    ids = write_events(db_url, 200)
    odd = {event_id for n, event_id in enumerate(ids) if n % 2}

    # The buggy release: every odd order fails, and with one attempt allowed, dies.
    with workers(db_url, "tests.operator._app:buggy", INBOX_WORKER__MAX_ATTEMPTS="1"):
        wait_for(
            lambda: scalar(db_url, "select count(*) from inbox_work where state = 'pending'") == 0,
            timeout=90,
            what="the buggy workers to settle every event",
        )
    assert scalar(db_url, "select count(*) from effects") == 100
    dead = {r[0] for r in rows(db_url, "select event_id from inbox_work where state = 'dead'")}
    assert dead == odd

    status = inbox(db_url, "status", "--json")
    assert status.returncode == 2, status.stderr
    assert json.loads(status.stdout)["dead"] == 100

    # The fix is deployed; the operator replays the dead letters.
    with workers(db_url, "tests.operator._app:fixed"):
        result = inbox(db_url, "replay", "--state", "dead", "--reason", "fix", "--yes", "--json")
        assert result.returncode == 0, result.stderr
        run = json.loads(result.stdout)
        assert (run["selected"], run["queued"], run["already_pending"]) == (100, 100, 0)
        wait_for(
            lambda: scalar(db_url, "select count(*) from inbox_work") == 0,
            timeout=90,
            what="the fixed workers to process the replay",
        )

    # Exactly the 100 dead events ran once more, as a replay of that run; the rest untouched.
    replay_id = run["replay_id"]
    effects = rows(db_url, "select event_id, is_replay, replay_id, handler from effects")
    assert len(effects) == 200
    replayed = [e for e in effects if e[3] == "fixed"]
    assert {e[0] for e in replayed} == odd
    assert all(e[1] is True and e[2] == replay_id for e in replayed)
    assert {e[0] for e in effects if e[3] == "buggy"} == set(ids) - odd

    history = rows(
        db_url,
        "select event_id, array_agg(outcome || ':' || coalesce(replay_id::text, '-') order by id)"
        " from inbox_attempts group by event_id",
    )
    by_event = dict(history)
    assert all(by_event[i] == ["dead:-", f"processed:{replay_id}"] for i in odd)
    assert all(by_event[i] == ["processed:-"] for i in set(ids) - odd)

    [record] = rows(db_url, "select kind, reason, filter, selected, queued from inbox_replays")
    assert record == ("replay", "fix", {"states": ["dead"]}, 100, 100)

    shown = inbox(db_url, "events", "show", str(min(odd)), "--json")
    assert shown.returncode == 0, shown.stderr
    attempts = json.loads(shown.stdout)["attempts"]
    assert [(a["outcome"], a["replay_id"], a["replay_reason"]) for a in attempts] == [
        ("dead", None, None),
        ("processed", replay_id, "fix"),
    ]
    assert inbox(db_url, "status").returncode == 0
