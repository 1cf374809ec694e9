"""The code the workers run, as the console shows it: the running versions on the overview,
the version of each attempt, and the version a run requires on the pages that show runs."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from inbox import queries
from tests._wait import rows
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


def _attempt_versions(client: TestClient, event: int) -> list[str]:
    attempts = _section(
        client.get(f"/events/{event}").text, '<section id="attempts">', "</section>"
    )
    assert "<th>Worker</th><th>Version</th>" in attempts
    return re.findall(r'<td class="attempt-version">(.*?)</td>', attempts)


def test_each_attempt_shows_the_version_that_ran_it(client: TestClient, seeded_db: Seeded) -> None:
    # The seed's worker ran both attempts: its version is a fingerprint of the seed's code.
    [(ran,)] = rows(
        seeded_db.url,
        "select distinct version from inbox_attempts where event_id = %s",
        [seeded_db.key_event],
    )
    assert ran
    # An attempt recorded before workers reported their versions has none.
    rows(
        seeded_db.url,
        "insert into inbox_attempts (event_id, attempt, started_at, outcome, worker)"
        " values (%s, 1, now(), 'failed', 'old-host:1/0') returning id",
        [seeded_db.pending_id],
    )
    sign_in(client, VIEWER)
    assert (
        _attempt_versions(client, seeded_db.key_event)
        == [f'<code class="version">{ran}</code>'] * 2
    )
    assert _attempt_versions(client, seeded_db.pending_id) == ["-"]


def _runs(client: TestClient, event: int) -> list[str]:
    return re.findall(r'<li class="replay">(.*?)</li>', client.get(f"/events/{event}").text, re.S)


def test_the_runs_of_an_event_show_the_version_they_require(
    client: TestClient, seeded_db: Seeded
) -> None:
    fixed, plain = seeded_db.key_event, seeded_db.paging_ids[0]
    queries.replay(seeded_db.url, reason="fix", ids=[fixed], require_version=FIXED_VERSION)
    queries.replay(seeded_db.url, reason="again", ids=[plain])
    sign_in(client, VIEWER)
    [required] = _runs(client, fixed)
    assert f'(via api; only on version <code class="version">{FIXED_VERSION}</code>)' in required
    [run] = _runs(client, plain)
    assert "(via api):" in run
    assert "only on version" not in run


@pytest.mark.xfail(
    strict=True,
    reason="inbox/sql/operator.sql's replay_run does not select required_version yet",
)
def test_a_runs_page_shows_the_version_it_requires(client: TestClient, seeded_db: Seeded) -> None:
    run = queries.replay(
        seeded_db.url, reason="fix", ids=[seeded_db.key_event], require_version=FIXED_VERSION
    )
    plain = queries.replay(seeded_db.url, reason="again", ids=[seeded_db.paging_ids[0]])
    sign_in(client, VIEWER)
    assert 'id="run-version"' not in client.get(f"/replay/runs/{plain.replay_id}").text
    page = client.get(f"/replay/runs/{run.replay_id}").text
    shown = _section(page, '<dd id="run-version">', "</dd>")
    assert shown.startswith(f'<code class="version">{FIXED_VERSION}</code>')
    # Nothing runs the fix yet: its events wait, and the page says so until one does.
    assert f"No worker of version {FIXED_VERSION} is running" in page
    with running_workers(seeded_db.url, {"web-1:4101": OLD_VERSION}):
        assert "No worker of version" in client.get(f"/replay/runs/{run.replay_id}").text
    with running_workers(seeded_db.url, {"web-2:4102": FIXED_VERSION}):
        assert "No worker of version" not in client.get(f"/replay/runs/{run.replay_id}").text
