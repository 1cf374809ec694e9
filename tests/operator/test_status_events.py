"""``inbox status`` exit codes and ``inbox events list/show``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from inbox import EventNotFoundError, InboxWriter
from inbox.queries import EventFilter, event, events, replay, status
from processors import Event, Router
from tests.operator._support import env_for, inbox
from tests.processors._support import run_until_empty, settings, write_events


def test_status_exit_codes_follow_dead_letters_and_pending_age(db_url: str) -> None:
    [first, second] = write_events(db_url, 2)
    fresh = inbox(db_url, "status", "--json")
    assert fresh.returncode == 0, fresh.stderr
    report = json.loads(fresh.stdout)
    assert report["healthy"] is True
    [shop] = report["sources"]
    assert (shop["source"], shop["received_1h"], shop["pending"], shop["rejected"]) == (
        "shop",
        2,
        2,
        None,
    )

    with psycopg.connect(db_url) as conn:  # the work table is not the log: it may be edited
        conn.execute(
            "update inbox_work set run_at = now() - interval '10 minutes' where event_id = %s",
            [first],
        )
    stale = inbox(db_url, "status")
    assert stale.returncode == 2
    assert "UNHEALTHY" in stale.stdout
    assert "oldest pending" in stale.stdout
    assert inbox(db_url, "status", "--max-age", "1h").returncode == 0

    with psycopg.connect(db_url) as conn:
        conn.execute(
            "update inbox_work set state = 'dead', last_error = 'E: x' where event_id = %s",
            [second],
        )
    st = status(db_url, max_age=timedelta(hours=1))
    assert not st.healthy
    assert st.problems == ["1 dead letter"]
    assert (st.sources[0].dead, st.sources[0].pending) == (1, 1)


def test_replayed_work_waiting_behind_live_work_is_not_unhealthy(db_url: str) -> None:
    ids = write_events(db_url, 3)
    with psycopg.connect(db_url) as conn:
        conn.execute("delete from inbox_work")  # as if processed
    replay(db_url, reason="backfill", ids=ids)
    with psycopg.connect(db_url) as conn:
        conn.execute("update inbox_work set run_at = now() - interval '1 hour'")
    st = status(db_url)
    assert st.healthy
    assert (st.sources[0].replay_queued, st.sources[0].oldest_pending_seconds) == (3, None)


def test_events_show_lists_three_deliveries_and_two_attempts(db_url: str) -> None:
    with InboxWriter(db_url) as writer:
        created = writer.write(
            "shop",
            "evt_42",
            b'{"n": 42}',
            {"content-type": "application/json", "authorization": "Bearer secret"},
            event_type="order.paid",
        )
        writer.write("shop", "evt_42", b'{"n": 42}')
        writer.write("shop", "evt_42", b'{"n": 43}')  # the provider changed the body
    router = Router()

    @router.on("shop")
    async def flaky(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        if event.attempt == 1:
            raise ConnectionError("ledger timed out")

    run_until_empty(db_url, router, worker_settings=settings(backoff_base_seconds=0.01))

    shown = inbox(db_url, "events", "show", "shop:evt_42", "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert detail["id"] == created.event_id
    assert detail["state"] == "processed"
    assert detail["delivery_count"] == 3
    assert [d["differs"] for d in detail["deliveries"]] == [False, False, True]
    assert detail["body_json"] == {"n": 42}
    assert detail["headers"]["authorization"] == "[redacted]"
    assert [(a["attempt"], a["outcome"], a["error_class"]) for a in detail["attempts"]] == [
        (1, "failed", "ConnectionError"),
        (2, "processed", None),
    ]
    assert all(a["worker"] and a["duration_seconds"] >= 0 for a in detail["attempts"])

    human = inbox(db_url, "events", "show", str(created.event_id))
    assert human.returncode == 0, human.stderr
    text = human.stdout
    assert "deliveries (3)" in text
    assert "attempts (2)" in text
    assert "ConnectionError: ledger timed out" in text
    deliveries = text[text.index("deliveries (3)") : text.index("attempts (2)")].splitlines()
    # The console's words: the first delivery is the original, later ones compare to it.
    rows = [line for line in deliveries if line.strip()[:1].isdigit()]
    assert [row.rsplit("  ", 1)[-1] for row in rows] == ["original", "same body", "body differs"]
    assert '"n": 42' in text
    assert "Bearer secret" not in text
    assert "\x1b[" not in text  # no colour when stdout is not a terminal

    missing = inbox(db_url, "events", "show", "shop:nope")
    assert missing.returncode == 2
    assert "no event" in missing.stderr
    with pytest.raises(EventNotFoundError):
        event(db_url, 999_999)


def test_events_list_filters_and_pages_by_keyset(db_url: str) -> None:
    paid = write_events(db_url, 12, event_type="invoice.paid")
    with InboxWriter(db_url) as writer:
        other = [
            writer.write("stripe", f"s-{n}", b"\x00\xff", event_type="charge.refunded").event_id
            for n in range(3)
        ]
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "update inbox_work set state = 'dead', attempts = 3, last_error = %s"
            " where event_id = %s",
            ["ValueError: 100% bad_amount", paid[0]],
        )

    seen: list[int] = []
    before = None
    pages = 0
    while True:
        page = events(db_url, EventFilter(), limit=5, before=before)
        seen += [e.id for e in page.events]
        pages += 1
        if page.next_before is None:
            break
        before = page.next_before
    assert seen == sorted(paid + other, reverse=True)
    assert pages == 3

    def ids(**criteria: Any) -> list[int]:
        return [e.id for e in events(db_url, EventFilter(**criteria), limit=100).events]

    assert sorted(ids(type="invoice.*")) == paid
    assert sorted(ids(type="charge.*", source="stripe")) == other
    assert ids(type="invoice_paid") == []  # LIKE's wildcards are escaped
    assert ids(states=("dead",)) == [paid[0]]
    assert ids(error="100% BAD_") == [paid[0]]
    assert ids(key="key-3") == [paid[3]]
    assert ids(since=datetime.now(UTC) + timedelta(minutes=1)) == []
    assert len(ids(states=("pending",))) == 14

    listed = inbox(db_url, "events", "list", "--source", "stripe", "--limit", "2")
    assert listed.returncode == 0, listed.stderr
    assert f"more: --before {other[1]}" in listed.stdout
    assert "charge.refunded" in listed.stdout
    assert "pending" in listed.stdout


def test_rejections_are_read_from_the_receivers_metrics(db_url: str) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from inbox import ReceiverMetrics

    metrics = ReceiverMetrics()
    metrics.observe("shop", "rejected", reason="bad_signature")
    metrics.observe("shop", "rejected", reason="stale_timestamp")
    metrics.observe("ghost", "rejected", reason="bad_signature")  # nothing ever stored
    body, content_type = metrics.render()

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    write_events(db_url, 1)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        st = status(db_url, receiver_metrics=[url, "http://127.0.0.1:9/metrics"])
    finally:
        server.shutdown()
        server.server_close()
    assert {s.source: s.rejected for s in st.sources} == {"ghost": 1, "shop": 2}
    assert st.healthy
    assert st.warnings[0] == "receiver metrics unavailable: http://127.0.0.1:9/metrics"


def test_a_duplicate_uses_up_an_id_as_the_events_help_says(db_url: str) -> None:
    with InboxWriter(db_url) as writer:
        first = writer.write("shop", "evt_a", b"{}")
        again = writer.write("shop", "evt_a", b"{}")
        second = writer.write("shop", "evt_b", b"{}")
    assert (again.is_new, again.event_id) == (False, first.event_id)
    assert second.event_id == first.event_id + 2  # the duplicate's id went unused

    listed = inbox(db_url, "events", "list", "--json")
    assert [e["id"] for e in json.loads(listed.stdout)["events"]] == [
        second.event_id,
        first.event_id,
    ]
    for command in ("list", "show"):
        shown = inbox(db_url, "events", command, "--help", env=env_for(db_url, COLUMNS="400"))
        assert shown.returncode == 0, shown.stderr
        assert "Event ids are not consecutive: a duplicate delivery" in shown.stdout


def test_status_counts_a_worker_by_its_heartbeat_and_says_when_none_is_seen(
    db_url: str,
) -> None:
    write_events(db_url, 1)
    alone = inbox(db_url, "status")
    assert alone.returncode == 0, alone.stderr
    assert "no worker seen" in alone.stdout
    assert "healthy" not in alone.stdout.splitlines()[0]
    assert any("no worker process can be seen" in w for w in status(db_url).warnings)

    # Behind a transaction pooler no session of the server names the worker: its
    # heartbeat does, while it is recent.
    with psycopg.connect(db_url) as conn:
        conn.execute(
            "insert into inbox_workers (name, version, seen_at) values"
            " ('pooled:1', 'v1', now()), ('gone:2', 'v1', now() - interval '5 minutes')"
        )
    st = status(db_url)
    assert (st.worker_processes, st.listeners) == (1, 0)
    assert [(v.version, v.processes) for v in st.worker_versions] == [("v1", 1)]
    assert any("1 of 1 worker processes have no listener" in w for w in st.warnings)
    seen = inbox(db_url, "status")
    assert seen.stdout.splitlines()[0].endswith("healthy")
