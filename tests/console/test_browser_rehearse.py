"""The replay's "Rehearse" step in a real browser: the operator previews a replay of the
broken orders, rehearses it first on a running worker with the handlers, watches the page
turn from queued to the report (each event failing, with its traceback) without a reload,
and goes back to the replay's confirm with the same selection.

With ``INBOX_CONSOLE_SCREENSHOTS=docs/console`` the run regenerates
docs/console/replay-rehearsal.png.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from tests._wait import rows, scalar, wait_for
from tests.console._browser import LiveServer, Screenshots, click_and_load, find, sign_in
from tests.console._rehearsal import router
from tests.console._seed import DEAD_COUNT, Seeded
from tests.console.conftest import OPERATOR
from tests.processors._support import run_worker_until, settings

pytestmark = pytest.mark.slow


@pytest.fixture
def worker(seeded_db: Seeded) -> Iterator[None]:
    """A worker with the rehearsal's handlers, running in a thread until the test ends."""
    url = seeded_db.url
    with_sources = "select count(*) from inbox_workers where sources = '{shop}'"
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            run_worker_until(url, router, done.is_set, worker_settings=settings(), timeout=120)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread below
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    wait_for(lambda: scalar(url, with_sources) == 1, timeout=15, what="the worker to register")
    try:
        yield
    finally:
        done.set()
        thread.join(30)
    assert not failed, failed


def test_operator_rehearses_a_replay_before_confirming_it(
    console: LiveServer,
    seeded_db: Seeded,
    worker: None,
    browser: webdriver.Chrome,
    shots: Screenshots,
) -> None:
    base = console.base_url + "/console"
    sign_in(browser, base, *OPERATOR)
    browser.get(base + "/replay?source=shop&type=order.broken")
    click_and_load(browser, find(browser, "form#replay-filter button[type=submit]"))
    assert find(browser, "#replay-count").text.strip() == str(DEAD_COUNT)

    browser.execute_script("window.__inbox_same_page = true")
    click_and_load(browser, find(browser, "button#replay-rehearse-start"))
    assert "/replay/rehearsals/" in browser.current_url
    browser.execute_script("window.__inbox_same_page = true")
    WebDriverWait(browser, 20, ignored_exceptions=(WebDriverException,)).until(
        lambda d: (
            d.find_element(By.CSS_SELECTOR, "#rehearsal").get_attribute("data-state") == "done"
        ),
        message="the rehearsal's page never said done",
    )
    assert browser.execute_script("return window.__inbox_same_page") is True  # no reload
    assert find(browser, "main").get_attribute("data-refresh") is None
    assert find(browser, "#rehearsal-failed").text.strip() == str(DEAD_COUNT)
    assert find(browser, "#rehearsal-done").text.strip() == str(DEAD_COUNT)
    failures = find(browser, "table#rehearsal-failures").text
    assert "RuntimeError" in failures
    events = browser.find_elements(By.CSS_SELECTOR, "table#rehearsal-events tr.rehearsed")
    assert len(events) == DEAD_COUNT
    assert all("failed" in e.get_attribute("class").split() for e in events)
    first = events[0]
    first.find_element(By.CSS_SELECTOR, "details summary").click()
    traceback = first.find_element(By.CSS_SELECTOR, "details pre").text
    assert "Traceback (most recent call last)" in traceback
    assert "cannot parse order broken-" in traceback
    shots.take(browser, "replay-rehearsal")

    # Back to the replay: the same selection, ready for its reason and confirm.
    click_and_load(browser, find(browser, "form#rehearsal-back button[type=submit]"))
    assert find(browser, "#replay-count").text.strip() == str(DEAD_COUNT)
    assert find(browser, "form#replay-confirm")
    assert rows(seeded_db.url, "select kind, created_by, via from inbox_replays") == [
        ("rehearsal", OPERATOR[0], "console")
    ]
