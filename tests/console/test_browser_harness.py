"""The browser harness on its own: a real uvicorn process, the system's Chromium, a form
submitted and a screenshot saved — so a failure of the console's browser test is the
console's, not the harness's."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.console._browser import (
    CHROMEDRIVER,
    CHROMIUM,
    LiveServer,
    Screenshots,
    click_and_load,
    find,
    free_port,
    serve,
    uvicorn_factory,
)


@pytest.fixture
def trivial_server(tmp_path: Path) -> Iterator[LiveServer]:
    port = free_port()
    yield from serve(
        uvicorn_factory("tests.console._browser_app:create_app", port),
        tmp_path / "server.log",
        port=port,
    )


def test_chromium_loads_a_page_from_a_real_server_and_submits_its_form(
    trivial_server: LiveServer, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    browser.get(trivial_server.base_url + "/")
    assert browser.find_element(By.ID, "greeting").text == "Hello from a real server"

    browser.find_element(By.CSS_SELECTOR, "form#echo input[name=text]").send_keys("<b>hi</b>")
    click_and_load(browser, browser.find_element(By.CSS_SELECTOR, "form#echo button"))
    # Escaped by the page: the browser shows the markup as text.
    assert find(browser, "#echoed").text == "<b>hi</b>"

    shot = Screenshots(tmp_path / "shots").take(browser, "echo")
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.stat().st_size > 1000


def test_the_browser_is_the_operating_systems_chromium(browser: webdriver.Chrome) -> None:
    assert browser.service.path == str(CHROMEDRIVER)
    installed = subprocess.run(
        [str(CHROMIUM), "--version"], capture_output=True, text=True, check=True, timeout=30
    ).stdout  # "Chromium 156.0.8078.114 built on Debian ..."
    assert browser.capabilities["browserVersion"] in installed.split()
