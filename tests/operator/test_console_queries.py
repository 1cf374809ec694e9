"""The operator API the console's pages call (and the CLI): search, the events page with
its cursor and filters, event detail, activity, dead letters, a run's progress, the audit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from inbox import EventNotFoundError, InboxWriter, ReplayNotFoundError, queries
from inbox.queries import EventFilter
from tests._wait import rows


def _write(url: str, specs: list[tuple[str, str, str]]) -> list[int]:
    """(source, key, type) each, oldest first."""
    with InboxWriter(url) as writer:
        return [
            writer.write(source, key, f'{{"k": "{key}"}}'.encode(), event_type=kind).event_id
            for source, key, kind in specs
        ]


def _attempt(conn: psycopg.Connection, event_id: int, outcome: str, **extra: object) -> None:
    columns = ["event_id", "attempt", "started_at", "outcome", *extra]
    values = [event_id, 1, datetime.now(UTC), outcome, *extra.values()]
    conn.execute(
        f"insert into inbox_attempts (received_at, {', '.join(columns)})"
        f" select received_at, {', '.join(['%s'] * len(values))}"
        " from inbox_keys where event_id = %s",
        [*values, event_id],
    )


def _settle(url: str, event_id: int, outcome: str = "processed") -> None:
    with psycopg.connect(url) as conn:
        conn.execute("delete from inbox_work where event_id = %s", [event_id])
        _attempt(conn, event_id, outcome)


def test_search_finds_an_id_a_source_key_and_a_key_in_every_source(db_url: str) -> None:
    stripe, github, other, digits = _write(
        db_url,
        [
            ("stripe", "evt_123", "invoice.paid"),
            ("github", "evt_123", "push"),
            ("stripe", "evt_9", "invoice.paid"),
            ("shop", "42", "order.paid"),
        ],
    )
    assert [e.id for e in queries.search(db_url, "evt_123")] == [github, stripe]
    assert [e.id for e in queries.search(db_url, " stripe:evt_123 ")] == [stripe]
    assert [e.id for e in queries.search(db_url, str(other))] == [other]
    # digits are an id and a key at once: both readings are tried
    assert [e.id for e in queries.search(db_url, "42")] == [digits]  # no event 42: the key
    assert queries.search(db_url, "nope:nothing") == []
    assert queries.search(db_url, "evt_404") == []
    with pytest.raises(ValueError, match="search for an event id"):
        queries.search(db_url, "  ")


def test_the_events_page_walks_every_event_once_by_cursor(db_url: str) -> None:
    ids = _write(db_url, [("shop", f"k{n}", "order.paid") for n in range(7)])
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        page = queries.events(db_url, EventFilter(source="shop"), limit=3, cursor=cursor)
        seen += [e.id for e in page.events]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(ids, reverse=True)
    assert pages == 3
    assert page.to_json()["next_cursor"] is None
    with pytest.raises(ValueError, match="not a page cursor"):
        queries.events(db_url, cursor="bm9wZQ")
    with pytest.raises(ValueError, match="not a page cursor"):
        queries.events(db_url, cursor="!!")
    with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
        queries.events(db_url, limit=5000)


def test_the_events_filters(db_url: str) -> None:
    paid, failed, dead, queued, repeated, push = _write(
        db_url,
        [
            ("stripe", "a", "invoice.paid"),
            ("stripe", "b", "invoice.failed"),
            ("stripe", "c", "invoice.paid"),
            ("stripe", "d", "charge.ok"),
            ("stripe", "e", "charge.ok"),
            ("github", "f", "push"),
        ],
    )
    _settle(db_url, paid)
    _settle(db_url, repeated)
    _settle(db_url, push)
    with psycopg.connect(db_url) as conn:
        _attempt(conn, failed, "failed")
        conn.execute("update inbox_work set last_error = 'E: x' where event_id = %s", [failed])
        conn.execute(
            "update inbox_work set state = 'dead', last_error = 'E: y' where event_id = %s", [dead]
        )
        conn.execute("delete from inbox_work where event_id = %s", [queued])
        _attempt(conn, queued, "processed")
    queries.replay(db_url, reason="re-run", ids=[queued])
    with InboxWriter(db_url) as writer:
        writer.write("stripe", "e", b"another body")  # a repeat delivery
        writer.write("stripe", "e", b'{"k": "e"}')

    def ids(**given: object) -> list[int]:
        return [e.id for e in queries.events(db_url, EventFilter(**given)).events]  # type: ignore[arg-type]

    assert ids(type="invoice.*") == [dead, failed, paid]
    assert ids(source="github") == [push]
    assert ids(states=("dead",)) == [dead]
    assert ids(states=("retrying",)) == [failed]
    assert ids(states=("replay-queued",)) == [queued]
    assert ids(states=("pending", "dead")) == [queued, dead]
    assert ids(states=("processed",)) == [push, repeated, paid]
    assert ids(repeats=True) == [repeated]
    assert ids(replayed=True) == [queued]
    assert ids(source="stripe", type="charge.*", repeats=True) == [repeated]
    [(at,)] = rows(db_url, "select received_at from inbox_events where id = %s", [dead])
    assert ids(since=at, until=at + timedelta(microseconds=1)) == [dead]
    assert [e.id for e in queries.dead(db_url).events] == [dead]
    assert [e.id for e in queries.dead(db_url, EventFilter(source="github")).events] == []
    with pytest.raises(ValueError, match="unknown state 'lost'"):
        EventFilter(states=("lost",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="range is empty"):
        EventFilter(since=at, until=at)


def test_the_detail_shows_differing_deliveries_tracebacks_and_the_replays(db_url: str) -> None:
    [event_id] = _write(db_url, [("stripe", "evt_1", "invoice.paid")])
    with InboxWriter(db_url) as writer:
        writer.write("stripe", "evt_1", b'{"k": "evt_1"}')  # the same body again
        writer.write("stripe", "evt_1", b'{"k": "evt_1", "late": true}')
    with psycopg.connect(db_url) as conn:
        conn.execute("delete from inbox_work")
        _attempt(
            conn,
            event_id,
            "failed",
            error_class="KeyError",
            error_message="'amount'",
            error_traceback='Traceback (most recent call last):\n  File "h.py"\nKeyError',
        )
    first = queries.replay(db_url, reason="fix #1", ids=[event_id], actor="olga", via="console")
    detail = queries.event(db_url, event_id)
    original, same, differs = detail.deliveries
    assert original.id is None
    assert (same.differs, differs.differs) == (False, True)
    assert (
        queries.delivery_body(db_url, event_id, differs.id or 0) == b'{"k": "evt_1", "late": true}'
    )
    assert queries.delivery_body(db_url, event_id, same.id or 0) == b'{"k": "evt_1"}'
    with pytest.raises(EventNotFoundError, match="has no delivery"):
        queries.delivery_body(db_url, event_id + 1, differs.id or 0)
    [attempt] = detail.attempts
    assert attempt.error_traceback is not None
    assert attempt.error_traceback.endswith("KeyError")
    [run] = detail.replays  # queued, not attempted yet: found by its work row
    assert (run.id, run.created_by, run.via, run.reason) == (
        first.replay_id,
        "olga",
        "console",
        "fix #1",
    )
    with psycopg.connect(db_url) as conn:
        conn.execute("delete from inbox_work")
        _attempt(conn, event_id, "processed", replay_id=first.replay_id)
    second = queries.replay(db_url, reason="again", ids=[event_id])
    assert [r.id for r in queries.event(db_url, event_id).replays] == [
        second.replay_id,
        first.replay_id,
    ]
    assert queries.event(db_url, event_id).to_json()["replays"][0]["reason"] == "again"


def test_activity_counts_per_bucket_and_fills_the_gaps(db_url: str) -> None:
    [a, b, c] = _write(db_url, [("shop", k, "t") for k in ("a", "b", "c")])
    with psycopg.connect(db_url) as conn:
        _attempt(conn, a, "processed")
        _attempt(conn, b, "failed")
        _attempt(conn, b, "retry")  # a handler's Retry: neither processed nor failed
        _attempt(conn, c, "skipped")
        conn.execute(  # an hour and a half ago: in the day's series only
            "insert into inbox_attempts"
            " (event_id, received_at, attempt, started_at, finished_at, outcome)"
            " select event_id, received_at, 2, now() - interval '90 minutes',"
            " now() - interval '90 minutes', 'dead' from inbox_keys where event_id = %s",
            [b],
        )
    hour = queries.activity(db_url, queries.LAST_HOUR)
    assert len(hour.points) == 60
    assert [p.at for p in hour.points] == sorted(p.at for p in hour.points)
    assert hour.points[1].at - hour.points[0].at == timedelta(minutes=1)
    totals = [sum(getattr(p, f) for p in hour.points) for f in ("received", "processed", "failed")]
    assert totals == [3, 2, 1]
    day = queries.activity(db_url, queries.LAST_DAY)
    assert len(day.points) == 96
    assert sum(p.failed for p in day.points) == 2
    assert day.to_json()["step_seconds"] == 900
    with pytest.raises(ValueError, match="at most 1440 buckets"):
        queries.activity(db_url, (timedelta(days=2), timedelta(minutes=1)))


def test_dead_letters_retried_by_id_and_the_run_s_progress(db_url: str) -> None:
    ids = _write(db_url, [("shop", f"k{n}", "t") for n in range(5)])
    with psycopg.connect(db_url) as conn:
        conn.execute("update inbox_work set state = 'dead', last_error = 'E: x'")
    chosen = ids[:4]
    run = queries.retry_dead(db_url, reason="bug fixed", ids=chosen, actor="olga", via="console")
    assert run.queued == 4
    assert [e.id for e in queries.dead(db_url).events] == [ids[4]]
    progress = queries.replay_progress(db_url, run.replay_id or 0)
    assert (progress.processed, progress.failed, progress.pending) == (0, 0, 4)
    assert progress.run.kind == "dead-retry"
    with psycopg.connect(db_url) as conn:  # as the workers would settle them
        conn.execute("delete from inbox_work where event_id = any(%s)", [chosen[:2]])
        for event_id in chosen[:2]:
            _attempt(conn, event_id, "processed", replay_id=run.replay_id)
        _attempt(conn, chosen[2], "failed", replay_id=run.replay_id)
        conn.execute(
            "update inbox_work set state = 'dead', last_error = 'E: z' where event_id = %s",
            [chosen[2]],
        )
        _attempt(conn, chosen[3], "failed", replay_id=run.replay_id)
        conn.execute("update inbox_work set last_error = 'E: z' where event_id = %s", [chosen[3]])
    progress = queries.replay_progress(db_url, run.replay_id or 0)
    assert (progress.processed, progress.failed, progress.pending, progress.retrying) == (
        2,
        1,
        1,
        1,
    )
    assert progress.attempts == 4
    assert not progress.finished
    with pytest.raises(ReplayNotFoundError, match="no replay run 999"):
        queries.replay_progress(db_url, 999)


def test_the_audit_lists_runs_retries_and_prunes_newest_first_in_pages(db_url: str) -> None:
    [a, b] = _write(db_url, [("shop", "a", "t"), ("shop", "b", "t")])
    queries.replay(db_url, reason="one", ids=[a], via="cli")
    with psycopg.connect(db_url) as conn:
        conn.execute("update inbox_work set state = 'dead' where event_id = %s", [b])
    queries.retry_dead(db_url, reason="two", ids=[b], actor="olga", via="console")
    queries.prune(db_url, timedelta(days=30), actor="ops@box")
    queries.replay(db_url, reason="four", ids=[a, b])
    first = queries.audit(db_url, limit=3)
    assert [(e.kind, e.reason) for e in first.entries] == [
        ("replay", "four"),
        ("prune", None),
        ("dead-retry", "two"),
    ]
    assert (first.entries[2].created_by, first.entries[2].via) == ("olga", "console")
    assert first.entries[1].filter["older_than_seconds"] == 30 * 86400
    assert first.next_cursor is not None
    rest = queries.audit(db_url, limit=3, cursor=first.next_cursor)
    # a's work was still pending: selected, not queued again
    assert [(e.kind, e.reason, e.via, e.selected, e.count) for e in rest.entries] == [
        ("replay", "one", "cli", 1, 0)
    ]
    assert rest.next_cursor is None
    with pytest.raises(ValueError, match="not a page cursor"):
        queries.audit(db_url, cursor=first.entries[0].kind)
