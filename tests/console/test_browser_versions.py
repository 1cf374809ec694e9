"""The console in a real browser: replaying on the fix only, while old code still runs.

A deploy is half done: one worker still runs the old code, two run the fix. The operator
sees both versions on the overview, with a warning; previews a replay of the dead letters,
which warns that any of them may run it; requires the fix's version in the confirm form (a
plain select: no script) and replays. The run records the version, its work waits for a
worker of it, and the event's page names the version among the runs that included it.

Screenshots: ``overview-versions`` and ``replay-version`` (docs/console.md).
"""

from __future__ import annotations

import re

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from tests._wait import rows
from tests.console._browser import LiveServer, Screenshots, click_and_load, find, sign_in
from tests.console._seed import (
    FIXED_VERSION,
    OLD_VERSION,
    TWO_VERSIONS,
    Seeded,
    running_workers,
)
from tests.console.conftest import OPERATOR

pytestmark = pytest.mark.slow

REASON = "INC-43: the order parser is fixed in 9f3b7a1; re-run its dead letters there"


def versions(driver: webdriver.Chrome, table: str) -> list[tuple[str, str]]:
    """The version and process count of each row of a running-workers table."""
    return [
        (cells[0].text, cells[1].text)
        for row in driver.find_elements(By.CSS_SELECTOR, f"table#{table} tr.version")
        for cells in [row.find_elements(By.TAG_NAME, "td")]
    ]


def test_an_operator_replays_dead_letters_on_the_fixed_version_only(
    console: LiveServer, seeded_db: Seeded, browser: webdriver.Chrome, shots: Screenshots
) -> None:
    base = console.base_url + "/console"
    with running_workers(seeded_db.url, TWO_VERSIONS):
        sign_in(browser, base, *OPERATOR)
        assert versions(browser, "worker-versions") == [(FIXED_VERSION, "2"), (OLD_VERSION, "1")]
        warnings = [w.text for w in browser.find_elements(By.CSS_SELECTOR, "#health .warning")]
        assert any("workers run 2 versions of the code" in w for w in warnings), warnings
        assert find(browser, "#versions-hint").is_displayed()
        shots.take(browser, "overview-versions")

        click_and_load(browser, find(browser, "header nav a[href$='/replay']"))
        form = find(browser, "form#replay-filter")
        form.find_element(By.CSS_SELECTOR, "input[name=source]").send_keys("shop")
        Select(form.find_element(By.CSS_SELECTOR, "select[name=state]")).select_by_value("dead")
        click_and_load(browser, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))

        assert find(browser, "#replay-count").text == str(len(seeded_db.dead_ids))
        assert versions(browser, "replay-versions") == [(FIXED_VERSION, "2"), (OLD_VERSION, "1")]
        warning = find(browser, "#replay-workers .replay-warning").text
        assert "any of them may run these events" in warning
        confirm = find(browser, "form#replay-confirm")
        choice = Select(confirm.find_element(By.CSS_SELECTOR, "select[name=require_version]"))
        assert [o.get_attribute("value") for o in choice.options] == [
            "",
            FIXED_VERSION,
            OLD_VERSION,
        ]
        assert choice.first_selected_option.get_attribute("value") == ""  # any, unless chosen
        choice.select_by_value(FIXED_VERSION)
        # The page has no script at all: the choice travels with the form as it is.
        assert browser.execute_script("return document.scripts.length") == 0
        confirm.find_element(By.CSS_SELECTOR, "[name=reason]").send_keys(REASON)
        shots.take(browser, "replay-version")
        click_and_load(browser, find(browser, "button#replay-start"))

        match = re.search(r"/replay/runs/(\d+)$", browser.current_url)
        assert match, browser.current_url
        run_id = int(match.group(1))
        assert find(browser, ".run-reason").text == REASON

    recorded = rows(
        seeded_db.url,
        "select r.required_version, r.created_by, r.via, array_agg(distinct w.required_version)"
        " from inbox_replays r join inbox_work w on w.replay_id = r.id"
        " where r.id = %s group by r.id",
        [run_id],
    )
    assert recorded == [(FIXED_VERSION, OPERATOR[0], "console", [FIXED_VERSION])]

    browser.get(f"{base}/events/{seeded_db.dead_ids[0]}")
    [run] = [
        r
        for r in browser.find_elements(By.CSS_SELECTOR, "section#replays li.replay")
        if f"#{run_id}" in r.text
    ]
    assert f"only on version {FIXED_VERSION}" in run.text
    assert run.find_element(By.CSS_SELECTOR, "code.version").text == FIXED_VERSION


def test_a_long_version_is_cut_to_fit_the_attempts_table(
    console: LiveServer, seeded_db: Seeded, browser: webdriver.Chrome
) -> None:
    """``[app] version`` may be up to 200 characters: the attempts table shows its start on
    one line (the cell's title has all of it), and the page never scrolls sideways."""
    version = "release-2026.12.06-" + "0123456789abcdef" * 11
    rows(
        seeded_db.url,
        "insert into inbox_attempts"
        " (event_id, received_at, attempt, started_at, outcome, worker, version)"
        " select event_id, received_at, 1, now(), 'failed', 'web-1:4101/0', %s"
        " from inbox_keys where event_id = %s returning id",
        [version, seeded_db.pending_id],
    )
    sign_in(browser, console.base_url + "/console", *OPERATOR)
    browser.get(f"{console.base_url}/console/events/{seeded_db.pending_id}")
    cell = find(browser, "section#attempts td.attempt-version code")
    assert cell.get_attribute("title") == version
    assert browser.execute_script(
        "return arguments[0].scrollWidth > arguments[0].clientWidth", cell
    )
    assert cell.rect["height"] < 30  # one line
    wide, window = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert wide <= window, f"the event page scrolls sideways: {wide} > {window}"
