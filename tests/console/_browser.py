"""The real-browser harness: a console served by a real uvicorn process, driven by the
operating system's headless Chromium through Selenium.

Only the system's browser is used (Debian's ``chromium`` and ``chromium-driver``, installed
by ``.ci/run``): the driver's path is given explicitly, so Selenium Manager is never asked to
find or download one, and ``SE_OFFLINE`` forbids it any network access should it run anyway.

Screenshots go to ``$INBOX_CONSOLE_SCREENSHOTS`` (``docs/console`` regenerates the docs'
images), else to the test's temporary folder.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tests._wait import wait_for

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS_ENV = "INBOX_CONSOLE_SCREENSHOTS"
# The start of a browser test's skip reason, which the run's summary looks for (conftest.py).
MISSING_BROWSER = f"no {CHROMIUM} and {CHROMEDRIVER}"
# Wide enough for the events table, tall enough that a detail page fits in one picture.
WINDOW = (1280, 1000)

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers give /dev/shm 64 MB; Chromium then crashes
    "--disable-quic",
    "--no-first-run",
    # No calls home: the tests must pass, and must not leak, on a machine without a network.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",  # screenshots show the page, not the window's scrollbar
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """A command serving HTTP on 127.0.0.1:``port`` in a child process, its output in a log."""

    def __init__(
        self, argv: Sequence[str], *, port: int, log_path: Path, env: Mapping[str, str]
    ) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self._log = log_path.open("w")
        self.process = subprocess.Popen(
            list(argv), cwd=REPO, env=dict(env), stdout=self._log, stderr=subprocess.STDOUT
        )

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_until_serving(self, path: str = "/", timeout: float = 60) -> None:
        """Block until the server answers ``path`` at all (any status): it is then up."""

        def answers() -> bool:
            assert self.process.poll() is None, f"the server exited:\n{self.output()}"
            try:
                httpx.get(self.base_url + path, timeout=2)
            except httpx.TransportError:
                return False
            return True

        wait_for(answers, timeout=timeout, what=f"{self.base_url}{path} to answer")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self._log.close()


def serve(
    argv: Sequence[str], log_path: Path, *, port: int, env: Mapping[str, str] | None = None
) -> Iterator[LiveServer]:
    """Run ``argv`` as a live server until the generator is closed (for fixtures)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_")}
    server = LiveServer(argv, port=port, log_path=log_path, env={**clean, **(env or {})})
    try:
        server.wait_until_serving()
        yield server
    finally:
        server.stop()


def uvicorn_factory(app_factory: str, port: int) -> list[str]:
    """The command that serves ``module:function`` (an app factory) with uvicorn."""
    return [
        sys.executable, "-m", "uvicorn", "--factory", app_factory,
        "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
    ]  # fmt: skip


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A fresh headless Chromium (its own profile) driven through the system chromedriver."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        missing = f"{MISSING_BROWSER}: apt-get install chromium chromium-driver"
        # CI must run the browser tests (.ci/run installs both packages and sets CI); on a
        # newcomer's machine they are skipped, and the run's summary says so in one line.
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    profile = tempfile.mkdtemp(prefix="inbox-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    try:
        # Selenium Manager must never fetch a browser or a driver: with the driver's path
        # given it is not consulted at all, and offline it could not download if it were.
        with mock.patch.dict(os.environ, {"SE_OFFLINE": "true", "SE_AVOID_STATS": "true"}):
            driver = webdriver.Chrome(
                service=Service(executable_path=str(CHROMEDRIVER)), options=options
            )
        try:
            driver.set_page_load_timeout(30)
            yield driver
        finally:
            driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def find(driver: webdriver.Chrome, css: str, timeout: float = 15) -> WebElement:
    """The element ``css`` selects, once the page shows it."""
    return WebDriverWait(driver, timeout).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css)),
        message=f"no {css} on {driver.current_url}",
    )


def click_and_load(driver: webdriver.Chrome, element: WebElement, timeout: float = 15) -> None:
    """Click ``element`` (a link or a submit button) and wait for the next page to load."""
    wait_for_next_page(driver, element.click, timeout)


def wait_for_next_page(
    driver: webdriver.Chrome, action: Callable[[], object], timeout: float = 15
) -> None:
    """Run ``action`` (which navigates) and wait until the next page has loaded.

    The current page is marked by a window property, which the next page's window lacks.
    While the old document is being torn down the driver may answer with any error (not
    only a stale element), so errors until then only mean "not yet".
    """
    where = driver.current_url
    driver.execute_script("window.__inbox_old_page = true")
    action()
    WebDriverWait(driver, timeout, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return window.__inbox_old_page === undefined && document.readyState === 'complete'"
        ),
        message=f"no new page loaded after an action on {where}",
    )


class Screenshots:
    """Saves the browser's current page as ``<folder>/<name>.png``, with stable names."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.saved: list[Path] = []

    def take(self, driver: webdriver.Chrome, name: str, *, whole_page: bool = True) -> Path:
        """``whole_page``: the window grows to the document's height first (up to 4000 px);
        else only the first screen is taken (a long list)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.png"
        if whole_page:
            height = driver.execute_script(
                "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
            )
            driver.set_window_size(WINDOW[0], max(WINDOW[1], min(int(height) + 140, 4000)))
        try:
            assert driver.save_screenshot(str(path)), f"no screenshot saved to {path}"
        finally:
            driver.set_window_size(*WINDOW)
        self.saved.append(path)
        return path


def screenshots(tmp_path: Path) -> Screenshots:
    """Screenshots saved to ``$INBOX_CONSOLE_SCREENSHOTS`` (relative to the repository), else
    to ``tmp_path``."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    return Screenshots(REPO / folder if folder else tmp_path / "screenshots")


def sign_in(driver: webdriver.Chrome, base: str, name: str, password: str) -> None:
    """Sign in to the console at ``base`` on its sign-in form."""
    driver.get(base + "/login")
    form = find(driver, "form#login")
    form.find_element(By.CSS_SELECTOR, "input[name=username]").send_keys(name)
    form.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(password)
    click_and_load(driver, form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert find(driver, "#whoami").text.startswith(name)
