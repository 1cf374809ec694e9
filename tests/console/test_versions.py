"""The code the workers run, as the console shows it: the running versions on the overview."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from tests.console._seed import FIXED_VERSION, OLD_VERSION, Seeded, running_workers
from tests.console.conftest import VIEWER, sign_in


def _section(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


def _versions(html: str) -> list[tuple[str, int]]:
    table = _section(html, '<table id="worker-versions"', "</table>")
    found = re.findall(
        r'<code class="version">([^<]+)</code></td><td class="num">(\d+)</td>', table
    )
    return [(version, int(processes)) for version, processes in found]


def test_overview_shows_the_running_workers_by_version(
    client: TestClient, seeded_db: Seeded
) -> None:
    sign_in(client, VIEWER)
    idle = client.get("/").text
    assert 'id="worker-versions"' not in idle  # the seed's worker has stopped
    assert "versions of the code" not in idle
    with running_workers(seeded_db.url, {"web-2:4102": FIXED_VERSION}):
        one = client.get("/").text
        assert _versions(one) == [(FIXED_VERSION, 1)]
        assert "versions of the code" not in one
        assert 'id="versions-hint"' not in one
        old = {"web-1:4101": OLD_VERSION, "web-3:4103": FIXED_VERSION}
        with running_workers(seeded_db.url, old):
            two = client.get("/").text
    # Newest first: the fix started after the old code.
    assert _versions(two) == [(FIXED_VERSION, 2), (OLD_VERSION, 1)]
    lines = re.findall(r'<tr class="version">(.*?)</tr>', two, re.S)
    assert "UTC (20 min ago)" in lines[0]
    assert "UTC (40 min ago)" in lines[1]
    [warning] = re.findall(r'<p class="warning">([^<]*versions of the code[^<]*)</p>', two)
    assert f"workers run 2 versions of the code: {FIXED_VERSION} (2), {OLD_VERSION} (1)" in (
        warning
    )
    assert 'id="versions-hint"' in two
