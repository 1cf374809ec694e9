"""The replay's "Rehearse" step in the console: the request queued in the database, a
worker with the handlers taking it, its progress and report on the page; the refusals
(no worker with the handlers, a viewer, a missing CSRF token) and the time limit."""

from __future__ import annotations

import re
import threading
from typing import Any

import anyio
import psycopg
import pytest
from starlette.testclient import TestClient

from processors._rehearsal.requests import RehearsalRequests
from tests._wait import rows, scalar, wait_for
from tests.console._rehearsal import WORKER, gate, router
from tests.console._seed import DEAD_COUNT, Seeded
from tests.console.conftest import OPERATOR, VIEWER, csrf_of, sign_in
from tests.processors._support import run_worker_until, settings

BROKEN = {"source": "shop", "type": "order.broken"}


@pytest.fixture
def shop_db(seeded_db: Seeded) -> Seeded:
    with psycopg.connect(seeded_db.url, autocommit=True) as conn:
        conn.execute("create table shop_orders (key text primary key)")
    return seeded_db


def a_worker_runs(url: str, sources: list[str]) -> None:
    """A worker process's row as its heartbeat keeps it (the console reads only that)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "insert into inbox_workers (name, version, sources, seen_at)"
            " values (%s, 'v1', %s, now())",
            [WORKER, sources],
        )


def run_one(url: str) -> bool:
    requests = RehearsalRequests(url, router, WORKER, timeout_seconds=5)
    return anyio.run(requests.run_one)


def ask(client: TestClient, fields: dict[str, str]) -> Any:
    token = csrf_of(client, "/replay")
    return client.post("/replay/rehearse", data={"csrf": token, **fields}, follow_redirects=False)


def test_a_rehearsal_is_queued_run_by_a_worker_and_reported(
    client: TestClient, shop_db: Seeded
) -> None:
    url = shop_db.url
    sign_in(client, OPERATOR)
    preview = client.post("/replay/preview", data={"csrf": csrf_of(client, "/replay"), **BROKEN})
    assert 'id="replay-rehearse"' in preview.text

    a_worker_runs(url, ["shop"])
    asked = ask(client, BROKEN)
    assert asked.status_code == 303, asked.text
    page_url = asked.headers["location"]
    request_id = int(page_url.rsplit("/", 1)[1])
    [(kind, who, via, selected, queued)] = rows(
        url, "select kind, created_by, via, selected, queued from inbox_replays"
    )
    assert (kind, who, via, selected, queued) == ("rehearsal", "olga", "console", DEAD_COUNT, 0)
    assert rows(url, "select sources, state from inbox_rehearsal_requests") == [
        (["shop"], "queued")
    ]
    queued = client.get(page_url).text
    assert 'data-state="queued"' in queued
    assert 'data-refresh="1"' in queued
    assert "rehearsal-no-worker" not in queued

    # Running: the handler holds the first event until the test has seen the page.
    gate["open"] = threading.Event()
    try:
        runner = threading.Thread(target=run_one, args=(url,))
        runner.start()
        wait_for(
            lambda: scalar(url, "select state from inbox_rehearsal_requests") == "running",
            timeout=10,
            what="the worker to take the request",
        )
        running = client.get(page_url).text
        assert 'data-state="running"' in running
        assert WORKER in running
        gate["open"].set()
        runner.join(30)
    finally:
        gate.clear()

    done = client.get(page_url).text
    assert 'data-state="done"' in done
    assert "data-refresh" not in done  # it stops asking
    assert re.search(rf'id="rehearsal-done">{DEAD_COUNT}<', done)
    assert re.search(rf'id="rehearsal-failed">{DEAD_COUNT}<', done)
    assert "cannot parse order broken-0" in done
    assert "Traceback (most recent call last)" in done
    assert 'id="rehearsal-back"' in done  # back to the replay's confirm
    assert '<input type="hidden" name="type" value="order.broken">' in done
    # The audit row leads to the report; nothing else was kept.
    run = client.get(f"/replay/runs/{request_id}").text
    assert f'href="/replay/rehearsals/{request_id}"' in run
    assert scalar(url, "select count(*) from shop_orders") == 0


def test_what_a_rehearsal_would_write_is_counted(client: TestClient, shop_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    a_worker_runs(shop_db.url, ["shop"])
    asked = ask(client, {"source": "shop", "type": "order.paid"})
    assert asked.status_code == 303
    assert run_one(shop_db.url)
    done = client.get(asked.headers["location"]).text
    writes = done.split('<table id="rehearsal-writes">', 1)[1].split("</table>", 1)[0]
    inserted = re.search(r"public\.shop_orders</code></td><td class=\"num\">(\d+)<", writes)
    assert inserted, writes
    assert int(inserted.group(1)) == scalar(
        shop_db.url, "select count(*) from inbox_events where event_type = 'order.paid'"
    )
    assert scalar(shop_db.url, "select count(*) from shop_orders") == 0


def test_a_real_worker_runs_the_request(client: TestClient, shop_db: Seeded) -> None:
    """The worker records the sources it handles, and takes the request in its loop."""
    url = shop_db.url
    sign_in(client, OPERATOR)
    a_worker_runs(url, ["shop"])
    asked = ask(client, BROKEN)
    assert asked.status_code == 303
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("delete from inbox_workers")
    run_worker_until(
        url,
        router,
        lambda: scalar(url, "select state from inbox_rehearsal_requests") == "done",
        worker_settings=settings(),
        what="the worker to run the rehearsal",
    )
    assert rows(url, "select sources from inbox_workers") == [(["shop"],)]
    assert 'data-state="done"' in client.get(asked.headers["location"]).text


def test_no_worker_with_the_handlers_and_the_time_limit(
    client: TestClient, shop_db: Seeded
) -> None:
    url = shop_db.url
    sign_in(client, OPERATOR)
    refused = ask(client, BROKEN)
    assert refused.status_code == 409
    assert "No worker with the handlers of shop is running" in refused.text
    a_worker_runs(url, ["stripe"])  # another source's handlers do not count
    assert ask(client, BROKEN).status_code == 409
    assert scalar(url, "select count(*) from inbox_replays") == 0

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("update inbox_workers set sources = '{*}'")  # a catch-all router
    asked = ask(client, BROKEN)
    assert asked.status_code == 303
    page_url = asked.headers["location"]
    # The worker stopped before taking it: the page says so while it waits.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("update inbox_workers set stopped_at = now()")
    waiting = client.get(page_url).text
    assert 'id="rehearsal-no-worker"' in waiting
    assert "No worker with the handlers of shop is running" in waiting

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("update inbox_rehearsal_requests set deadline = now() - interval '1 s'")
    expired = client.get(page_url).text
    assert 'data-state="expired"' in expired
    assert "data-refresh" not in expired
    assert not run_one(url)  # an expired request is never taken


def test_viewers_and_forms_without_the_token_are_refused(
    client: TestClient, shop_db: Seeded
) -> None:
    url = shop_db.url
    a_worker_runs(url, ["shop"])
    sign_in(client, VIEWER)
    assert ask(client, BROKEN).status_code == 403
    sign_in(client, OPERATOR)
    no_token = client.post("/replay/rehearse", data=BROKEN, follow_redirects=False)
    assert no_token.status_code == 403
    assert scalar(url, "select count(*) from inbox_replays") == 0
    asked = ask(client, BROKEN)
    assert asked.status_code == 303
    sign_in(client, VIEWER)
    assert client.get(asked.headers["location"]).status_code == 403
