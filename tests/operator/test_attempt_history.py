"""An event's attempt history in ``inbox events show``: one numbering across runs, which run
each attempt belongs to, and where a failed one failed."""

from __future__ import annotations

import json
from typing import Any

from inbox.queries import retry_dead
from processors import Event, Router
from tests._wait import scalar
from tests.operator._support import inbox
from tests.processors._support import run_until_empty, run_worker_until, settings, write_events


def _ledger_down() -> None:
    raise ConnectionError("ledger timed out")


def test_a_replays_attempts_continue_the_history_and_failures_show_their_traceback(
    db_url: str,
) -> None:
    [event_id] = write_events(db_url, 1)
    fixed = False
    router = Router()

    @router.on("shop")
    async def book(event: Event, conn: Any) -> None:
        if not fixed:
            _ledger_down()

    def dead() -> bool:
        return scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 1

    fast = settings(max_attempts=2, backoff_base_seconds=0.01, backoff_max_seconds=0.01)
    run_worker_until(db_url, router, dead, worker_settings=fast, what="a dead letter")
    fixed = True
    run = retry_dead(db_url, reason="ledger back", ids=[event_id])
    assert run.queued == 1
    run_until_empty(db_url, router, worker_settings=fast, what="the replay to run")

    shown = inbox(db_url, "events", "show", str(event_id), "--json")
    assert shown.returncode == 0, shown.stderr
    attempts = json.loads(shown.stdout)["attempts"]
    assert [(a["sequence"], a["attempt"], a["outcome"], a["replay_id"]) for a in attempts] == [
        (1, 1, "failed", None),
        (2, 2, "dead", None),
        (3, 1, "processed", run.replay_id),
    ]
    for failed in attempts[:2]:
        assert failed["error_traceback"].endswith("ConnectionError: ledger timed out\n")
        assert "in _ledger_down" in failed["error_traceback"]
    assert attempts[2]["error_traceback"] is None

    human = inbox(db_url, "events", "show", str(event_id))
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    # The version that ran it: the fingerprint of this test's handlers.
    [title] = [line for line in lines if line.startswith("traceback of attempt 2, version ")]
    assert title.endswith("; --json has all 2")
    version = title.removeprefix("traceback of attempt 2, version ").split(";")[0]
    assert all(a["version"] == version for a in attempts)
    start = lines.index(title)
    table = lines[lines.index("attempts (3)") + 2 : start - 1]  # the header, the reason
    assert [row.split()[:3] for row in table] == [
        ["1", "live", "#1"],
        ["2", "live", "#2"],
        ["3", "replay", str(run.replay_id)],
    ]
    assert f"replay {run.replay_id} #1" in table[2]
    assert lines[start - 1] == f"  replay {run.replay_id}: ledger back"
    shown_tb = "\n".join(line.removeprefix("  ") for line in lines[start + 1 :])
    assert shown_tb.startswith("Traceback (most recent call last):")
    assert "in _ledger_down" in shown_tb
    assert shown_tb.rstrip().endswith("ConnectionError: ledger timed out")
