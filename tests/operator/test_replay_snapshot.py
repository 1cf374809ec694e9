"""A replay reads one snapshot in one transaction: what its preview counted (and its
``confirm`` was asked about) is what it queues, whatever commits meanwhile."""

from __future__ import annotations

import psycopg
import pytest

from inbox import InboxWriter, RefusedError
from inbox.queries import EventFilter, replay, replay_runs, retry_dead
from tests._wait import scalar
from tests.operator.test_replay import _settled_once


def _queued_by(url: str, replay_id: int | None) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "select event_id from inbox_work where replay_id = %s order by event_id",
            [replay_id],
        ).fetchall()
    return [row[0] for row in rows]


def test_an_event_written_during_a_replay_is_not_in_it(db_url: str) -> None:
    ids = _settled_once(db_url, 5, fails=lambda n: True)
    asked: list[int] = []

    def confirm(count: int) -> bool:
        asked.append(count)
        # A delivery commits after the replay selected, before it enqueues: it matches the
        # filter, but it is not what the operator was shown.
        with InboxWriter(db_url) as writer:
            writer.write("shop", "late", b'{"n": 99}', event_type="order.paid")
        return True

    result = replay(
        db_url, reason="fixed", event_filter=EventFilter(source="shop"), confirm=confirm
    )
    assert asked == [5]
    assert (result.selected, result.queued, result.already_pending) == (5, 5, 0)
    assert _queued_by(db_url, result.replay_id) == sorted(ids)
    [run] = replay_runs(db_url)
    assert (run.selected, run.queued) == (5, 5)
    # The late event has its own live work, untouched by the replay.
    late = scalar(
        db_url,
        "select w.replay_id is null from inbox_work w join inbox_events e on e.id = w.event_id"
        " where e.idempotency_key = 'late'",
    )
    assert late is True


def test_work_queued_by_another_replay_meanwhile_starts_the_replay_over(db_url: str) -> None:
    ids = _settled_once(db_url, 10, fails=lambda n: True)
    asked: list[int] = []

    def confirm(count: int) -> bool:
        asked.append(count)
        if len(asked) == 1:
            # Another operator retries three of the same dead letters and commits first.
            retry_dead(db_url, reason="someone else", ids=ids[:3])
        return True

    result = retry_dead(db_url, reason="downstream is back", confirm=confirm)
    # The first preview (10) went stale before anything was queued: the replay began again
    # on a fresh snapshot and asked about what it then queued.
    assert asked == [10, 7]
    assert (result.selected, result.queued, result.already_pending) == (7, 7, 0)
    assert _queued_by(db_url, result.replay_id) == sorted(ids[3:])
    ours, theirs = replay_runs(db_url)
    assert (ours.selected, ours.queued) == (7, 7)
    assert (theirs.selected, theirs.queued) == (3, 3)
    assert scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 0


def test_a_selection_that_keeps_changing_is_refused_with_nothing_queued(db_url: str) -> None:
    ids = _settled_once(db_url, 12, fails=lambda n: True)
    asked: list[int] = []

    def confirm(count: int) -> bool:
        # Every time, another replay takes one more of the selection first.
        retry_dead(db_url, reason="someone else", ids=[ids[len(asked)]])
        asked.append(count)
        return True

    with pytest.raises(RefusedError, match="changed while the replay ran"):
        retry_dead(db_url, reason="downstream is back", confirm=confirm)
    assert asked == [12, 11, 10, 9, 8]
    assert [run.reason for run in replay_runs(db_url)] == ["someone else"] * 5
    assert scalar(db_url, "select count(*) from inbox_work where state = 'dead'") == 7
