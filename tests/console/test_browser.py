"""The console in a real browser: the operator's story of issue 10, end to end.

A provider says it delivered ``evt_browser_1`` three times. The operator signs in, searches the
key alone, opens the event, sees the three deliveries (one body differs) and both attempts
(the first failed, with its error), replays it after a dry run with a reason, and finds the
run in the audit under their name. A viewer then sees no replay button, and a replay POST
forged from the viewer's own page (with the viewer's valid CSRF token) is refused with 403.

Every page visited is saved as a screenshot with a stable name; with
``INBOX_CONSOLE_SCREENSHOTS=docs/console`` the run regenerates docs/console/*.png.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from inbox import InboxWriter
from processors import Event, Router
from tests._wait import scalar
from tests.console._browser import (
    LiveServer,
    Screenshots,
    chromium,
    click_and_load,
    find,
    free_port,
    screenshots,
    serve,
)
from tests.processors._support import run_worker_until, settings

pytestmark = pytest.mark.slow

SOURCE, KEY = "stripe", "evt_browser_1"
OPERATOR, OPERATOR_PASSWORD = "ada", "ada-operator-pass"
VIEWER, VIEWER_PASSWORD = "grace", "grace-viewer-pass"
ERROR = "card_declined: the bank said no (attempt 1)"
REASON = "INC-42: the handler's card check is fixed; re-run evt_browser_1"


# --- the data: written by the real writer, processed by a real worker -------------------


def _body(n: int, note: str) -> bytes:
    return json.dumps(
        {"id": f"evt_browser_{n}", "type": "payment_intent.succeeded", "data": {"note": note}}
    ).encode()


def _router() -> Router:
    router = Router()

    @router.on(SOURCE, "*")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        if event.key == KEY and event.attempt == 1:
            raise RuntimeError(ERROR)
        if event.key == "evt_browser_dead":
            raise ValueError("no such customer: cus_404")

    return router


def seed(url: str) -> int:
    """The event of the story, with neighbours so the lists are not empty; its id."""
    with InboxWriter(url) as writer:
        writer.write(SOURCE, "evt_browser_0", _body(0, "an earlier one"), event_type="charge.x")
        event_id = writer.write(
            SOURCE,
            KEY,
            _body(1, "first delivery"),
            {"content-type": "application/json", "stripe-signature": "t=1,v1=abc"},
            event_type="payment_intent.succeeded",
        ).event_id
        writer.write(SOURCE, KEY, _body(1, "first delivery"), event_type="payment_intent.x")
        writer.write(SOURCE, KEY, _body(1, "the provider changed it"), event_type="x")
        writer.write(
            SOURCE,
            "evt_browser_dead",
            _body(2, "<script>alert('x')</script> never runs"),
            event_type="customer.updated",
        )
    run_worker_until(
        url,
        _router(),
        lambda: (
            scalar(url, "select count(*) from inbox_work where state = 'pending'") == 0
            and scalar(url, "select count(*) from inbox_work") == 1
        ),
        worker_settings=settings(max_attempts=2),
        what="the story's event processed (after a failure) and the other dead-lettered",
    )
    return event_id


# --- the console: `inbox console` in its own process -----------------------------------


def _config(path: Path, url: str, port: int) -> Path:
    from inbox.console._passwords import hash_password

    path.write_text(
        f"""
[database]
url = "{url}"

[[sources]]
name = "{SOURCE}"
verifier = "stripe"
secrets = ["whsec_browser_test"]

[console]
secret_key = "browser-test-session-key-0123456789abcdef"
host = "127.0.0.1"
port = {port}

[[console.users]]
name = "{OPERATOR}"
role = "operator"
password_hash = "{hash_password(OPERATOR_PASSWORD)}"

[[console.users]]
name = "{VIEWER}"
role = "viewer"
password_hash = "{hash_password(VIEWER_PASSWORD)}"
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def story(db_url: str) -> int:
    return seed(db_url)


@pytest.fixture
def console(db_url: str, story: int, tmp_path: Path) -> Iterator[LiveServer]:
    port = free_port()
    config = _config(tmp_path / "inbox.toml", db_url, port)
    yield from serve(
        [sys.executable, "-m", "inbox", "--config", str(config), "console"],
        tmp_path / "console.log",
        port=port,
    )


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        yield driver


@pytest.fixture
def shots(tmp_path: Path) -> Screenshots:
    return screenshots(tmp_path)


# --- the story ------------------------------------------------------------------------


def sign_in(driver: webdriver.Chrome, base: str, name: str, password: str) -> None:
    driver.get(base + "/login")
    form = find(driver, "form#login")
    form.find_element(By.CSS_SELECTOR, "input[name=username]").send_keys(name)
    form.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(password)
    click_and_load(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert name in find(driver, "#whoami").text


def sign_out(driver: webdriver.Chrome) -> None:
    click_and_load(driver, find(driver, "form#logout button"))
    find(driver, "form#login")


def test_operator_finds_replays_and_audits_an_event_and_a_viewer_cannot_replay(
    console: LiveServer,
    story: int,
    db_url: str,
    browser: webdriver.Chrome,
    shots: Screenshots,
) -> None:
    base = console.base_url

    browser.get(base + "/")
    find(browser, "form#login")  # no anonymous page
    shots.take(browser, "login")

    sign_in(browser, base, OPERATOR, OPERATOR_PASSWORD)
    shots.take(browser, "overview")

    browser.get(base + "/events")
    assert len(browser.find_elements(By.CSS_SELECTOR, "table#events tr.event")) == 3
    shots.take(browser, "events")

    # The provider's key alone, typed in the header's search box.
    search = find(browser, "form#search input[name=q]")
    search.send_keys(KEY)
    old = browser.current_url
    search.submit()
    find(browser, "table#events, #event-meta")
    assert browser.current_url != old
    shots.take(browser, "search")
    rows = browser.find_elements(By.CSS_SELECTOR, "table#events tr.event")
    if rows:  # a list of the matches (a single match may also open the event directly)
        assert len(rows) == 1, [r.text for r in rows]
        assert KEY in rows[0].text
        click_and_load(browser, rows[0].find_element(By.CSS_SELECTOR, "a.event-link"))

    meta = find(browser, "#event-meta")
    assert KEY in meta.text
    assert browser.current_url.rstrip("/").endswith(f"/events/{story}")
    deliveries = browser.find_elements(By.CSS_SELECTOR, "section#deliveries .delivery")
    assert len(deliveries) == 3, [d.text for d in deliveries]
    attempts = browser.find_elements(By.CSS_SELECTOR, "section#attempts tr.attempt")
    assert len(attempts) == 2, [a.text for a in attempts]
    errors = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".attempt-error")]
    assert any(ERROR in e for e in errors), errors
    assert "first delivery" in find(browser, "#body").text
    shots.take(browser, "event")

    # Replay just this event: the dry run first.
    click_and_load(browser, find(browser, "form#replay-event button"))
    preview = find(browser, "#replay-preview")
    assert find(browser, "#replay-count").text.strip() == "1"
    assert re.search(r"\b1\b.*already processed|already processed.*\b1\b", preview.text), (
        preview.text
    )
    confirm = find(browser, "form#replay-confirm")
    included = confirm.find_elements(By.CSS_SELECTOR, "input[name=include_processed]")
    assert included, "the processed event needs an explicit include_processed checkbox"
    if not included[0].is_selected():
        included[0].click()
    confirm.find_element(By.CSS_SELECTOR, "[name=reason]").send_keys(REASON)
    shots.take(browser, "replay-preview")
    click_and_load(browser, find(browser, "button#replay-start"))

    run = find(browser, "#replay-run")
    match = re.search(r"/replay/runs/(\d+)", browser.current_url)
    assert match, browser.current_url
    run_id = int(match.group(1))
    counts = {
        name: int(find(browser, f"#run-{name}").text.strip())
        for name in ("processed", "failed", "pending")
    }
    assert sum(counts.values()) == 1, (counts, run.text)
    shots.take(browser, "replay-run")

    browser.get(base + "/audit")
    rows = browser.find_elements(By.CSS_SELECTOR, "table#audit tr.audit-row")
    mine = [r for r in rows if REASON in r.find_element(By.CSS_SELECTOR, ".audit-reason").text]
    assert len(mine) == 1, [r.text for r in rows]
    assert OPERATOR in mine[0].find_element(By.CSS_SELECTOR, ".audit-who").text
    assert "replay" in mine[0].find_element(By.CSS_SELECTOR, ".audit-kind").text.lower()
    assert scalar(db_url, "select count(*) from inbox_replays") == 1
    shots.take(browser, "audit")

    browser.get(base + "/dead")
    dead = browser.find_elements(By.CSS_SELECTOR, "table#dead input[name=ids]")
    assert len(dead) == 1
    shots.take(browser, "dead")

    sign_out(browser)

    # The viewer: the same event, no replay button, and a forged replay refused.
    sign_in(browser, base, VIEWER, VIEWER_PASSWORD)
    browser.get(f"{base}/events/{story}")
    find(browser, "#event-meta")
    assert browser.find_elements(By.CSS_SELECTOR, "form#replay-event") == []
    assert forged_replay(browser, base) == 403
    assert scalar(db_url, "select count(*) from inbox_replays") == 1
    shots.take(browser, "forbidden")
    assert run_id > 0


def forged_replay(driver: webdriver.Chrome, base: str) -> int:
    """POST a replay from the viewer's own page, with the viewer's own CSRF token; the
    status the server answered (read from the Performance API)."""
    token = find(driver, "form#search, form#logout").find_element(
        By.CSS_SELECTOR, "input[name=csrf]"
    )
    driver.execute_script(
        """
        const form = document.createElement('form');
        form.method = 'post';
        form.action = arguments[0];
        for (const [name, value] of Object.entries(arguments[1])) {
            const input = document.createElement('input');
            input.type = 'hidden'; input.name = name; input.value = value;
            form.appendChild(input);
        }
        document.body.appendChild(form);
        form.submit();
        """,
        base + "/replay",
        {
            "csrf": token.get_attribute("value"),
            "source": SOURCE,
            "reason": "forged by a viewer",
            "include_processed": "1",
        },
    )
    find(driver, "#forbidden")
    return int(
        driver.execute_script("return performance.getEntriesByType('navigation')[0].responseStatus")
    )
