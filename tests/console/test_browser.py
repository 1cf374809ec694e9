"""The console in a real browser: the operator's story, end to end.

A provider says it delivered ``evt_123`` three times (tests/console/_seed.py). The operator
signs in, searches the key alone, opens the event, sees the three deliveries (one body
differs) and both attempts (the first failed, with its error), replays it after a dry run
with a reason, and finds the run in the audit under their name. A viewer then sees no replay
button, and a replay POST forged from the viewer's own page (with the viewer's valid CSRF
token) is refused with 403.

Every page visited is saved as a screenshot with a stable name; with
``INBOX_CONSOLE_SCREENSHOTS=docs/console`` the run regenerates docs/console/*.png.
"""

from __future__ import annotations

import re

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from inbox import InboxWriter
from tests._wait import scalar
from tests.console._browser import (
    WINDOW,
    LiveServer,
    Screenshots,
    click_and_load,
    find,
    sign_in,
)
from tests.console._seed import TRACE_ID, XSS, Seeded, hold_an_ordered_key, traced_event
from tests.console._seed import router as seed_router
from tests.console.conftest import OPERATOR, VIEWER
from tests.processors._support import run_worker_until, settings

pytestmark = pytest.mark.slow

REASON = "INC-42: the invoice handler's amount check is fixed; re-run evt_123"


# --- the story ------------------------------------------------------------------------


def sign_out(driver: webdriver.Chrome) -> None:
    click_and_load(driver, find(driver, "form#logout button"))
    find(driver, "form#login")


def test_operator_finds_replays_and_audits_an_event_and_a_viewer_cannot_replay(
    console: LiveServer, seeded_db: Seeded, browser: webdriver.Chrome, shots: Screenshots
) -> None:
    base = console.base_url + "/console"
    event = seeded_db.key_event

    browser.get(base + "/")
    find(browser, "form#login")  # no anonymous page
    shots.take(browser, "login")

    sign_in(browser, base, *OPERATOR)
    assert find(browser, "table#sources")
    offsets = header_offsets(browser, "table#sources")
    assert len(offsets) == 9, offsets  # 1 h and 24 h twice, and the five other numbers
    assert all(abs(offset) <= 1 for _, offset in offsets), offsets
    strokes = series_strokes(browser)
    assert len(set(strokes.values())) == 3, strokes  # told apart by more than colour
    shots.take(browser, "overview")

    click_and_load(browser, find(browser, "header nav a[href$='/events']"))
    rows = browser.find_elements(By.CSS_SELECTOR, "table#events tr.event")
    assert len(rows) == 50  # the first page; more behind the next-page link
    assert rows[0].find_element(By.CSS_SELECTOR, "a.event-link").text == str(seeded_db.pending_id)
    assert find(browser, "a#next-page")
    shots.take(browser, "events", whole_page=False)

    # A key two sources share: the search lists both.
    search_for(browser, seeded_db.shared_key)
    rows = browser.find_elements(By.CSS_SELECTOR, "table#events tr.event")
    assert sorted(int(r.find_element(By.CSS_SELECTOR, "a.event-link").text) for r in rows) == (
        sorted(seeded_db.shared_key_ids)
    )
    shots.take(browser, "search")

    # The provider's key alone: one match, so it opens the event.
    search_for(browser, seeded_db.key)
    assert seeded_db.key in find(browser, "#event-meta").text
    assert browser.current_url.endswith(f"/events/{event}")
    deliveries = browser.find_elements(By.CSS_SELECTOR, "section#deliveries .delivery")
    assert len(deliveries) == 3, [d.text for d in deliveries]
    assert "original" in deliveries[0].text
    assert [("differs" in d.get_attribute("class").split()) for d in deliveries] == [
        False, False, True
    ]  # fmt: skip
    attempts = browser.find_elements(By.CSS_SELECTOR, "section#attempts tr.attempt")
    assert len(attempts) == 2, [a.text for a in attempts]
    assert "failed" in attempts[0].text
    assert "processed" in attempts[1].text
    error = attempts[0].find_element(By.CSS_SELECTOR, ".attempt-error").text
    assert "card_declined: amount 4200 does not match the invoice" in error
    assert '"amount": 4200' in find(browser, "#body").text
    runs = find(browser, "section#replays")
    assert runs.find_elements(By.CSS_SELECTOR, "li") == []  # a sentence, not a bullet
    assert runs.find_element(By.CSS_SELECTOR, "#no-runs").text.startswith("No replay")
    shots.take(browser, "event")

    # Replay just this event: the dry run first.
    click_and_load(browser, find(browser, "form#replay-event button[type=submit]"))
    preview = find(browser, "#replay-preview")
    assert find(browser, "#replay-count").text.strip() == "1"
    assert find(browser, "#replay-processed").text.strip() == "1", preview.text
    confirm = find(browser, "form#replay-confirm")
    included = confirm.find_elements(By.CSS_SELECTOR, "input[name=include_processed]")
    assert included, "the processed event needs an explicit include_processed checkbox"
    if not included[0].is_selected():
        included[0].click()
    confirm.find_element(By.CSS_SELECTOR, "[name=reason]").send_keys(REASON)
    shots.take(browser, "replay-preview")
    click_and_load(browser, find(browser, "button#replay-start"))

    find(browser, "#replay-run")
    match = re.search(r"/replay/runs/(\d+)$", browser.current_url)
    assert match, browser.current_url
    run_id = int(match.group(1))
    assert run_progress(browser) == {"processed": 0, "failed": 0, "pending": 1}
    assert OPERATOR[0] in find(browser, ".run-who").text
    assert "updates itself" in find(browser, "#run-state").text

    # A worker takes the replayed event; the run's page shows it processed by itself,
    # within a couple of its refreshes, without a reload.
    browser.execute_script("window.__inbox_same_page = true")
    queued = f"select count(*) from inbox_work where replay_id = {run_id}"
    run_worker_until(
        seeded_db.url,
        seed_router,
        lambda: scalar(seeded_db.url, queued) == 0,
        worker_settings=settings(max_attempts=3),
        what="the replayed event to settle",
    )
    WebDriverWait(browser, 3, ignored_exceptions=(WebDriverException,)).until(
        lambda d: run_progress(d)["pending"] == 0, message="the run's page still says pending"
    )
    assert browser.execute_script("return window.__inbox_same_page") is True  # no reload
    assert run_progress(browser) == {"processed": 1, "failed": 0, "pending": 0}
    assert find(browser, "#run-state").text == "Finished."
    assert find(browser, "main").get_attribute("data-refresh") is None  # it stops asking
    shots.take(browser, "replay-run")

    click_and_load(browser, find(browser, "header nav a[href$='/audit']"))
    rows = browser.find_elements(By.CSS_SELECTOR, "table#audit tr.audit-row")
    mine = [r for r in rows if REASON in r.find_element(By.CSS_SELECTOR, ".audit-reason").text]
    assert len(mine) == 1, [r.text for r in rows]
    assert OPERATOR[0] in mine[0].find_element(By.CSS_SELECTOR, ".audit-who").text
    assert "replay" in mine[0].find_element(By.CSS_SELECTOR, ".audit-kind").text.lower()
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 1
    shots.take(browser, "audit")

    # Markup from the database is text in a real browser too: shown, never run.
    browser.get(f"{base}/events/{seeded_db.xss_event}")
    assert find(browser, "#event-meta .key").text == XSS
    assert XSS in find(browser, "section#attempts .attempt-error").text
    assert browser.execute_script("return document.querySelectorAll('main script').length") == 0
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.accept()

    click_and_load(browser, find(browser, "header nav a[href$='/dead']"))
    dead = browser.find_elements(By.CSS_SELECTOR, "table#dead input[name=ids]")
    assert len(dead) == scalar(
        seeded_db.url, "select count(*) from inbox_work where state = 'dead'"
    )
    assert placeholder_fits(browser, "#retry-reason"), "the reason's placeholder is cut off"
    shots.take(browser, "dead")

    # Every dead letter shown, retried with one button (a plain form: no script).
    find(browser, "#retry-reason").send_keys("INC-43: parser fixed")
    click_and_load(browser, find(browser, "button#retry-shown"))
    assert find(browser, "h1").text.startswith("Dead-letter retry #")
    assert run_progress(browser)["pending"] == len(dead)

    sign_out(browser)

    # The viewer: the same event, no replay button, and a forged replay refused.
    sign_in(browser, base, *VIEWER)
    browser.get(f"{base}/events/{event}")
    find(browser, "#event-meta")
    assert browser.find_elements(By.CSS_SELECTOR, "form#replay-event") == []
    assert forged_replay(browser, base, event) == 403
    # Refused for the role, not for the token: the viewer's CSRF token was valid.
    assert "operator" in find(browser, "#forbidden").text
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 2  # the two above
    shots.take(browser, "forbidden")


def test_a_viewer_sees_held_ordered_keys_and_an_events_trace(
    console: LiveServer, seeded_db: Seeded, browser: webdriver.Chrome
) -> None:
    hold_an_ordered_key(seeded_db.url)
    traced = traced_event(seeded_db.url)
    base = console.base_url + "/console"
    sign_in(browser, base, *VIEWER)
    assert "Held ordered keys: 1" in find(browser, "#held").text
    browser.get(f"{base}/events/{traced}")
    assert TRACE_ID in find(browser, "#event-meta").text


def test_repeated_deliveries_show_as_one_line_with_a_count(
    console: LiveServer, seeded_db: Seeded, browser: webdriver.Chrome
) -> None:
    with InboxWriter(seeded_db.url) as writer:
        ids = [writer.write("github", "retried", b"{}").event_id for _ in range(22)]
    sign_in(browser, console.base_url + "/console", *OPERATOR)
    browser.get(f"{console.base_url}/console/events/{ids[0]}")
    lines = browser.find_elements(By.CSS_SELECTOR, "section#deliveries .delivery")
    assert [line.get_attribute("data-count") for line in lines] == ["1", "21"]
    assert "same body" in lines[1].text
    assert "\N{MULTIPLICATION SIGN} 21" in lines[1].text
    assert "Deliveries (22)" in find(browser, "section#deliveries h2").text


def test_the_events_table_fits_a_narrow_window(
    console: LiveServer, seeded_db: Seeded, browser: webdriver.Chrome
) -> None:
    """At 800 px, long keys and types are cut to fit (their cells' titles hold them) and
    the last error stays in view: the page never scrolls sideways."""
    key, kind = "d6f0a2b4" * 8, "customer.subscription.trial_will_end"
    with InboxWriter(seeded_db.url) as writer:
        writer.write("github", key, b"{}", event_type=kind)
    sign_in(browser, console.base_url + "/console", *OPERATOR)
    browser.set_window_size(800, WINDOW[1])
    for path in ("/events", "/dead"):
        browser.get(f"{console.base_url}/console{path}")
        table = find(browser, "table.events")
        wide, window = browser.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert wide <= window, f"{path} scrolls sideways: {wide} > {window}"
        last = table.find_element(By.CSS_SELECTOR, "th.c-error")
        assert last.text == "Last error"
        assert last.rect["x"] + last.rect["width"] <= window
    browser.get(f"{console.base_url}/console/events?source=github")
    cell = find(browser, "table#events td.key")
    assert cell.get_attribute("title") == key
    assert browser.execute_script(
        "return arguments[0].scrollWidth > arguments[0].clientWidth", cell
    )
    browser.get(f"{console.base_url}/console/dead")
    error = find(browser, "table#dead .clamp")
    assert error.get_attribute("title").startswith("RuntimeError: cannot parse order")


def header_offsets(driver: webdriver.Chrome, table: str) -> list[tuple[str, float]]:
    """For each right-aligned header: how far its text ends from where the numbers of the
    first row below it end (0: aligned)."""
    offsets = driver.execute_script(
        """
        const table = document.querySelector(arguments[0]);
        const end = el => { const r = document.createRange(); r.selectNodeContents(el);
                            return r.getBoundingClientRect().right; };
        const row = table.querySelector('tbody tr');
        return [...table.querySelectorAll('thead th.num')].map(th => {
            const box = th.getBoundingClientRect(), mid = (box.left + box.right) / 2;
            const td = [...row.cells].find(c => { const b = c.getBoundingClientRect();
                                                  return b.left <= mid && mid <= b.right; });
            return [th.textContent.trim(), end(td) - end(th)];
        });
        """,
        table,
    )
    return [(name, float(offset)) for name, offset in offsets]


def series_strokes(driver: webdriver.Chrome) -> dict[str, str]:
    """Each chart series' stroke as drawn (colour, width, dashes); the legend's swatches
    must be drawn the same."""
    strokes = driver.execute_script(
        """
        const look = el => { const s = getComputedStyle(el);
                             return [s.stroke, s.strokeWidth, s.strokeDasharray].join(' '); };
        return ['received', 'processed', 'failed'].map(name => [
            name,
            look(document.querySelector('svg.chart .series.' + name)),
            look(document.querySelector('svg.swatch .series.' + name)),
        ]);
        """
    )
    for name, chart, swatch in strokes:
        assert chart == swatch, (name, chart, swatch)
    return {name: chart for name, chart, _ in strokes}


def placeholder_fits(driver: webdriver.Chrome, css: str) -> bool:
    """Whether the input's placeholder text fits in its box, in the input's own font."""
    return bool(
        driver.execute_script(
            """
            const input = document.querySelector(arguments[0]), s = getComputedStyle(input);
            const pen = document.createElement('canvas').getContext('2d');
            pen.font = s.font;
            const room = input.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
            return pen.measureText(input.placeholder).width <= room;
            """,
            css,
        )
    )


def run_progress(driver: webdriver.Chrome) -> dict[str, int]:
    """The run page's counts, read in one script: the page's live refresh swaps <main>
    every few seconds, and one script runs between two swaps, never across one."""
    find(driver, "#replay-run")
    counts = driver.execute_script(
        "return ['processed', 'failed', 'pending'].map("
        "n => document.getElementById('run-' + n).textContent.trim())"
    )
    return dict(zip(("processed", "failed", "pending"), map(int, counts), strict=True))


def search_for(driver: webdriver.Chrome, text: str) -> None:
    """Type ``text`` in the header's search box and submit it."""
    box = find(driver, "form#search input[name=q]")
    box.clear()
    box.send_keys(text)
    click_and_load(driver, find(driver, "form#search button[type=submit]"))


def forged_replay(driver: webdriver.Chrome, base: str, event: int) -> int:
    """POST a replay from the viewer's own page, with the viewer's own CSRF token; the
    status the server answered (read from the Performance API)."""
    token = find(driver, "form#logout input[name=csrf]")
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
            "ids": str(event),
            "reason": "forged by a viewer",
            "include_processed": "1",
        },
    )
    find(driver, "#forbidden")
    return int(
        driver.execute_script("return performance.getEntriesByType('navigation')[0].responseStatus")
    )
