"""Rehearsals: handlers run on stored events in transactions that roll back, and the
report says what each would do and write (``processors.testing.rehearse``,
``inbox replay --rehearse``)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from inbox import InboxWriter
from processors import Event, Router
from processors.testing import rehearse
from tests._wait import rows, scalar
from tests.operator._support import inbox
from tests.processors import rehearsal_app
from tests.processors.rehearsal_app import TABLES

APP = "tests.processors.rehearsal_app:router"
INBOX_TABLES = (
    "inbox_events",
    "inbox_keys",
    "inbox_work",
    "inbox_attempts",
    "inbox_claims",
    "inbox_deliveries",
    "inbox_replays",
    "inbox_rehearsal_guard",
)


def _write(url: str, *events: tuple[str, str, int]) -> list[int]:
    """(source, type, n) each: their ids."""
    with InboxWriter(url) as writer:
        return [
            writer.write(source, f"{kind}-{n}", f'{{"n": {n}}}'.encode(), event_type=kind).event_id
            for source, kind, n in events
        ]


def _snapshot(url: str) -> dict[str, Any]:
    """Every row of the business tables and of the inbox's (the audit's apart)."""
    with psycopg.connect(url) as conn:
        return {
            table: sorted(map(repr, conn.execute(f"select * from {table}").fetchall()))
            for table in ("effects", "payments", "ledger", *INBOX_TABLES)
        }


@pytest.fixture
def shop(db_url: str) -> str:
    with psycopg.connect(db_url) as conn:
        conn.execute(TABLES)
    return db_url


def _by_id(report: Any) -> dict[int, Any]:
    return {e.event_id: e for e in report.events}


def test_each_outcome_is_reported_and_nothing_is_left_behind(shop: str) -> None:
    ids = _write(
        shop,
        ("shop", "order.paid", 2),
        ("shop", "order.paid", 3),
        ("shop", "order.later", 0),
        ("shop", "order.commit", 0),
        ("shop", "order.hang", 0),
        ("mail", "sent", 0),
        ("nobody", "x", 0),
    )
    before = _snapshot(shop)
    report = rehearse(shop, rehearsal_app.router, [*ids, 999_999], timeout_seconds=5)
    assert _snapshot(shop) == before
    assert rehearsal_app.called_out == []
    by = _by_id(report)
    even, odd, later, commit, hang, mail, nobody = (by[i] for i in ids)

    assert even.outcome == "succeeded"
    assert [(w.table, w.inserted, w.updated, w.deleted) for w in even.writes] == [
        ("public.effects", 1, 0, 0),
        ("public.ledger", 0, 1, 1),
        ("public.payments", 2, 0, 0),
    ]
    assert even.duration_seconds > 0
    assert (odd.outcome, odd.error_class, odd.error) == ("failed", "ValueError", "odd amount 3")
    assert odd.traceback is not None
    assert "in paid" in odd.traceback
    # What it wrote before it failed: the real run would roll that back too.
    assert {w.table for w in odd.writes} == {"public.effects", "public.payments", "public.ledger"}
    assert (later.outcome, later.error, later.retry_after_seconds) == (
        "retry",
        "the shop is closed",
        60.0,
    )
    assert commit.outcome == "failed"
    assert "a rehearsal never commits" in (commit.error or "")
    assert (hang.outcome, hang.error_class) == ("failed", "HandlerTimeoutError")
    assert mail.outcome == "skipped"
    assert "rehearse=True" in (mail.error or "")
    assert mail.handler == "tests.processors.rehearsal_app.sends"
    assert (nobody.outcome, nobody.handler) == ("skipped", None)
    assert report.missing == [999_999]
    assert report.counts() == {"succeeded": 1, "failed": 3, "retry": 1, "skipped": 2}
    assert report.failed == 3
    assert [(g["error_class"], g["count"]) for g in report.failures()] == [
        ("HandlerTimeoutError", 1),
        ("ReadOnlySqlTransaction", 1),
        ("ValueError", 1),
    ]


def test_the_handler_sees_a_replay_marked_as_a_rehearsal(db_url: str) -> None:
    seen: list[Event] = []
    router = Router(rehearse=True)

    @router.on("shop")
    def look(event: Event, conn: psycopg.Connection[Any]) -> None:
        seen.append(event)

    [event_id] = _write(db_url, ("shop", "order.paid", 1))
    report = rehearse(db_url, router, [event_id])
    assert report.counts()["succeeded"] == 1
    [event] = seen
    assert (event.is_rehearsal, event.is_replay, event.attempt, event.replay_id) == (
        True,
        True,
        1,
        None,
    )
    # A route's own flag wins over its router's default.
    strict = Router()
    strict.on("shop", rehearse=True)(look)
    assert rehearse(db_url, strict, [event_id]).counts()["succeeded"] == 1
    assert rehearse(db_url, Router(), [event_id]).counts()["skipped"] == 1


def test_a_rehearsal_takes_no_lock_on_live_work(shop: str) -> None:
    """A worker's claim holds the event's work row FOR UPDATE: the rehearsal runs anyway."""
    [event_id] = _write(shop, ("shop", "order.paid", 2))
    with psycopg.connect(shop) as claim:
        claim.execute("select * from inbox_work where event_id = %s for update", [event_id])
        report = rehearse(shop, rehearsal_app.router, [event_id], timeout_seconds=2)
    assert report.counts()["succeeded"] == 1


def test_the_command_reports_records_one_audit_row_and_exits_by_outcome(shop: str) -> None:
    ids = _write(shop, ("shop", "order.paid", 2), ("shop", "order.paid", 4))
    before = _snapshot(shop)
    ok = inbox(shop, "replay", *map(str, ids), "--rehearse", "--app", APP)
    assert ok.returncode == 0, ok.stderr
    assert "would succeed" in ok.stdout
    assert "public.payments" in ok.stdout
    after = _snapshot(shop)
    audit = after.pop("inbox_replays")
    assert {k: v for k, v in before.items() if k != "inbox_replays"} == after
    assert len(audit) == 1
    [(kind, reason, selected, queued, outcome, selection)] = rows(
        shop, "select kind, reason, selected, queued, outcome, filter from inbox_replays"
    )
    assert (kind, reason, selected, queued) == ("rehearsal", "(no reason given)", 2, 0)
    assert outcome == {"succeeded": 2, "failed": 0, "retry": 0, "skipped": 0}
    assert selection["ids"] == ids

    [odd] = _write(shop, ("shop", "order.paid", 3))
    failing = inbox(
        shop,
        "replay",
        "--source",
        "shop",
        "--rehearse",
        "--app",
        APP,
        "--json",
        "--reason",
        "the fix for odd amounts",
    )
    assert failing.returncode == 1, failing.stderr
    out = json.loads(failing.stdout)
    assert set(out) == {
        "rehearsal_id",
        "counts",
        "failures",
        "skipped",
        "writes",
        "missing",
        "events",
    }
    assert out["counts"] == {"succeeded": 2, "failed": 1, "retry": 0, "skipped": 0}
    assert out["failures"] == [
        {"error_class": "ValueError", "error": "odd amount 3", "count": 1, "event_ids": [odd]}
    ]
    assert out["writes"]["public.payments"] == {"inserted": 6, "updated": 0, "deleted": 0}
    failed = next(e for e in out["events"] if e["event_id"] == odd)
    assert "ValueError: odd amount 3" in failed["traceback"]
    assert scalar(shop, "select reason from inbox_replays order by id desc limit 1") == (
        "the fix for odd amounts"
    )
    limited = inbox(shop, "replay", "--source", "shop", "--rehearse", "--app", APP, "--limit", "1")
    assert limited.returncode == 0, limited.stderr
    assert "rehearsed 1 event(s)" in limited.stdout
    assert scalar(shop, "select count(*) from inbox_replays") == 3


@pytest.mark.parametrize(
    "args",
    [
        ("--all", "--rehearse", "--app", "no_such_module:router"),
        ("--all", "--rehearse", "--app", APP, "--dry-run"),
        ("--all", "--app", APP, "--reason", "x"),
        ("--all", "--rehearse", "--app", APP, "--limit", "0"),
    ],
)
def test_usage_errors_exit_2_in_one_line(db_url: str, args: tuple[str, ...]) -> None:
    result = inbox(db_url, "replay", *args)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert scalar(db_url, "select count(*) from inbox_replays") == 0


def test_events_are_read_a_chunk_at_a_time_in_id_order(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import processors._rehearsal.run

    monkeypatch.setattr(processors._rehearsal.run, "CHUNK", 2)
    router = Router(rehearse=True)
    router.on("shop")(lambda event, conn: None)
    ids = _write(db_url, *(("shop", "order.paid", n) for n in range(5)))
    report = rehearse(db_url, router, [999_999, *reversed(ids)])
    assert [e.event_id for e in report.events] == ids
    assert report.counts()["succeeded"] == 5
    assert report.missing == [999_999]


def test_batch_handlers_take_a_list_of_one_and_async_hangs_time_out(db_url: str) -> None:
    import asyncio

    router = Router(rehearse=True)
    lists: list[list[int]] = []

    @router.on_batch("shop")
    async def many(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
        lists.append([e.id for e in events])

    @router.on("slow", timeout_seconds=0.3)
    async def slow(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await asyncio.sleep(30)

    ids = _write(db_url, ("shop", "a", 1), ("shop", "b", 2), ("slow", "c", 3))
    report = rehearse(db_url, router, ids)
    assert lists == [[ids[0]], [ids[1]]]
    assert [e.outcome for e in report.events] == ["succeeded", "succeeded", "failed"]
    assert report.events[2].error_class == "HandlerTimeoutError"
    assert report.events[2].duration_seconds < 5


def test_statements_and_lock_waits_are_limited_to_the_handler_deadline(shop: str) -> None:
    """A row live work holds makes the rehearsal's handler fail at its lock timeout rather
    than wait (and make live work wait behind it)."""
    settings: list[tuple[str, str]] = []
    router = Router(rehearse=True)

    @router.on("peek")
    def peek(event: Event, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute(
            "select current_setting('statement_timeout'), current_setting('lock_timeout')"
        ).fetchone()
        assert row is not None
        settings.append(row)

    router.include(rehearsal_app.router)
    peeked, paid = _write(shop, ("peek", "x", 0), ("shop", "order.paid", 2))
    assert rehearse(shop, router, [peeked], timeout_seconds=2).counts()["succeeded"] == 1
    assert settings == [("2s", "2s")]
    with psycopg.connect(shop) as live:
        live.execute("select * from ledger where id = 1 for update")
        report = rehearse(shop, router, [paid], timeout_seconds=0.5)
    [event] = report.events
    # The lock timeout and the handler's deadline are the same length: either ends it.
    assert event.outcome == "failed"
    assert event.error_class in {"LockNotAvailable", "HandlerTimeoutError"}
    assert event.duration_seconds < 5
