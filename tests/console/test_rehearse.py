"""The replay's "Rehearse" step in the console: the request queued in the database, a
worker with the handlers taking it, its progress and report on the page; the refusals
(no worker with the handlers, a viewer, a missing CSRF token) and the time limit."""

from __future__ import annotations

import re
import threading
from typing import Any, LiteralString

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


def wait_running(url: str) -> None:
    wait_for(
        lambda: scalar(url, "select state from inbox_rehearsal_requests") == "running",
        timeout=10,
        what="the worker to take the request",
    )


def run_one(url: str) -> bool:
    requests = RehearsalRequests(url, router, WORKER, timeout_seconds=5)
    return anyio.run(requests.run_one)


def execute(url: str, statement: LiteralString) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def asked(client: TestClient, url: str, fields: dict[str, str] = BROKEN) -> str:
    """Signed in as the operator, with a worker of the shop's handlers running: the page
    of the rehearsal of ``fields`` asked for."""
    sign_in(client, OPERATOR)
    a_worker_runs(url, ["shop"])
    response = ask(client, fields)
    assert response.status_code == 303, response.text
    return str(response.headers["location"])


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
    response = ask(client, BROKEN)
    assert response.status_code == 303, response.text
    page_url = response.headers["location"]
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
        wait_running(url)
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
    page_url = asked(client, shop_db.url, {"source": "shop", "type": "order.paid"})
    assert run_one(shop_db.url)
    done = client.get(page_url).text
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
    page_url = asked(client, url)
    execute(url, "delete from inbox_workers")
    run_worker_until(
        url,
        router,
        lambda: scalar(url, "select state from inbox_rehearsal_requests") == "done",
        worker_settings=settings(),
        what="the worker to run the rehearsal",
    )
    assert rows(url, "select sources from inbox_workers") == [(["shop"],)]
    assert 'data-state="done"' in client.get(page_url).text


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

    execute(url, "update inbox_workers set sources = '{*}'")  # a catch-all router
    response = ask(client, BROKEN)
    assert response.status_code == 303
    page_url = response.headers["location"]
    # The worker stopped before taking it: the page says so while it waits.
    execute(url, "update inbox_workers set stopped_at = now()")
    waiting = client.get(page_url).text
    assert 'id="rehearsal-no-worker"' in waiting
    assert "No worker with the handlers of shop is running" in waiting

    execute(url, "update inbox_rehearsal_requests set deadline = now() - interval '1 s'")
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
    response = ask(client, BROKEN)
    assert response.status_code == 303
    for missing in ("/replay/rehearsals/999999", "/replay/rehearsals/x1"):
        assert client.get(missing).status_code == 404
    sign_in(client, VIEWER)
    assert client.get(response.headers["location"]).status_code == 403


def test_a_rehearsal_past_its_time_limit_stops_and_says_how_far_it_got(
    client: TestClient, shop_db: Seeded
) -> None:
    url = shop_db.url
    page_url = asked(client, url)
    execute(url, "update inbox_rehearsal_requests set deadline = now() + interval '1 s'")
    gate["hang"] = threading.Event()
    try:
        assert run_one(url)
    finally:
        gate.clear()
    assert rows(url, "select state, error from inbox_rehearsal_requests") == [
        ("expired", f"the time limit passed after 0 of {DEAD_COUNT} events")
    ]
    expired = client.get(page_url).text
    assert 'data-state="expired"' in expired
    assert "the time limit passed after 0 of" in expired


def test_a_worker_that_stops_mid_rehearsal_says_so(client: TestClient, shop_db: Seeded) -> None:
    url = shop_db.url
    asked(client, url)
    requests = RehearsalRequests(url, router, WORKER, timeout_seconds=30)

    async def stop_it_while_running() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(requests.run_one)
            await anyio.to_thread.run_sync(wait_running, url)
            tg.cancel_scope.cancel()  # as the worker's stop does, past its grace

    gate["hang"] = threading.Event()
    try:
        anyio.run(stop_it_while_running)
    finally:
        gate.clear()
    assert rows(url, "select state, error from inbox_rehearsal_requests") == [
        ("failed", f"worker {WORKER} stopped after 0 of {DEAD_COUNT} events")
    ]
