"""The code the workers run, as the console shows it: the running versions on the overview
and before a replay or a dead-letter retry, which may require one of them; the version of
each attempt; and the version a run requires on the pages that show runs."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from inbox import queries
from tests._wait import rows
from tests.console._seed import (
    FIXED_VERSION,
    OLD_VERSION,
    TWO_VERSIONS,
    Seeded,
    running_workers,
)
from tests.console.conftest import OPERATOR, VIEWER, csrf_of, sign_in


def _section(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


def _versions(html: str, table_id: str = "worker-versions") -> list[tuple[str, int]]:
    table = _section(html, f'<table id="{table_id}"', "</table>")
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
        "insert into inbox_attempts (event_id, received_at, attempt, started_at, outcome, worker)"
        " select event_id, received_at, 1, now(), 'failed', 'old-host:1/0' from inbox_keys"
        " where event_id = %s returning id",
        [seeded_db.pending_id],
    )
    sign_in(client, VIEWER)
    assert (
        _attempt_versions(client, seeded_db.key_event)
        == [f'<code class="version" title="{ran}">{ran}</code>'] * 2
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


def _options(html: str) -> list[tuple[str, bool]]:
    """The require_version select's options: (value, selected)."""
    select = _section(html, '<select id="require-version" name="require_version">', "</select>")
    found = re.findall(r'<option value="([^"]*)"( selected)?>', select)
    return [(value, bool(selected)) for value, selected in found]


def _required_versions(url: str) -> list[tuple[str, str | None, str | None]]:
    """Each run's kind and required version, and that of the work it queued."""
    return rows(
        url,
        "select r.kind, r.required_version,"
        " (select string_agg(distinct w.required_version, ',') from inbox_work w"
        "  where w.replay_id = r.id)"
        " from inbox_replays r order by r.id",
    )


def test_a_replay_can_require_a_running_version(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    token = csrf_of(client, "/replay")
    chosen = {"csrf": token, "source": "shop", "type": "order.paid"}
    confirm = {**chosen, "reason": "the fix", "include_processed": "1"}
    with running_workers(seeded_db.url, TWO_VERSIONS):
        preview = client.post("/replay/preview", data=chosen).text
        workers = _section(preview, '<section id="replay-workers">', "</section>")
        assert _versions(workers, "replay-versions") == [(FIXED_VERSION, 2), (OLD_VERSION, 1)]
        [warning] = re.findall(r'<p class="warning replay-warning">([^<]*)</p>', workers)
        assert "workers run 2 versions of the code" in warning
        assert "deploy the fix to every worker first" in warning
        form = _section(preview, '<form id="replay-confirm"', "</form>")
        assert _options(form) == [("", False), (FIXED_VERSION, False), (OLD_VERSION, False)]

        # A refused confirmation keeps the version chosen; running, it has no warning.
        no_reason = client.post("/replay", data={**chosen, "require_version": FIXED_VERSION})
        assert no_reason.status_code == 400
        assert (FIXED_VERSION, True) in _options(no_reason.text)
        assert "replay-warning" not in no_reason.text

        gone = client.post("/replay", data={**confirm, "require_version": "0badc0de"})
        assert gone.status_code == 409
        assert "No worker of version 0badc0de is running now, so nothing was queued" in gone.text
        assert _required_versions(seeded_db.url) == []

        started = client.post("/replay", data={**confirm, "require_version": f" {FIXED_VERSION} "})
        assert started.status_code == 200  # followed to the run's page
        assert "Replay run #" in started.text
    assert _required_versions(seeded_db.url) == [("replay", FIXED_VERSION, FIXED_VERSION)]

    # Any worker: the select's empty choice, as before versions.
    assert client.post("/replay", data={**confirm, "require_version": ""}).status_code == 200
    assert _required_versions(seeded_db.url)[-1][:2] == ("replay", None)


def test_a_dead_letter_retry_can_require_a_running_version(
    client: TestClient, seeded_db: Seeded
) -> None:
    sign_in(client, OPERATOR)
    idle = client.get("/dead").text
    assert '<p id="retry-versions" class="hint">No worker is running.</p>' in idle
    assert 'name="require_version"' not in idle  # nothing to choose from
    ids = [str(i) for i in seeded_db.dead_ids]
    with running_workers(seeded_db.url, TWO_VERSIONS):
        page = client.get("/dead").text
        assert _versions(page, "retry-versions") == [(FIXED_VERSION, 2), (OLD_VERSION, 1)]
        assert "deploy the fix to every worker first" in page
        form = _section(page, '<form id="dead-retry"', "</form>")
        assert _options(form) == [("", False), (FIXED_VERSION, False), (OLD_VERSION, False)]
        token = csrf_of(client, "/dead")
        fields = {"ids": ids, "csrf": token, "reason": "parser fixed"}
        no_reason = client.post(
            "/dead/retry", data={**fields, "reason": "", "require_version": OLD_VERSION}
        )
        assert no_reason.status_code == 400
        assert (OLD_VERSION, True) in _options(no_reason.text)
        gone = client.post("/dead/retry", data={**fields, "require_version": "0badc0de"})
        assert gone.status_code == 409
        assert "No worker of version 0badc0de is running now" in gone.text
        started = client.post(
            "/dead/retry", data={**fields, "require_version": FIXED_VERSION}, follow_redirects=False
        )
        assert started.status_code == 303
    assert _required_versions(seeded_db.url) == [("dead-retry", FIXED_VERSION, FIXED_VERSION)]


def test_requiring_a_version_is_an_operators_change(client: TestClient, seeded_db: Seeded) -> None:
    """The version rides on the same POSTs: a viewer, a missing CSRF token and a version no
    worker could have are refused, and nothing is queued."""
    replay = {"ids": str(seeded_db.key_event), "reason": "r", "include_processed": "1"}
    retry = {"ids": str(seeded_db.dead_ids[0]), "reason": "r"}
    with running_workers(seeded_db.url, TWO_VERSIONS):
        sign_in(client, VIEWER)
        token = csrf_of(client, "/dead")
        for path, fields in (("/replay", replay), ("/dead/retry", retry)):
            form = {**fields, "csrf": token, "require_version": FIXED_VERSION}
            refused = client.post(path, data=form)
            assert refused.status_code == 403, path
            assert "operator role" in refused.text
        sign_in(client, OPERATOR)
        token = csrf_of(client, "/dead")
        for path, fields in (("/replay", replay), ("/dead/retry", retry)):
            form = {**fields, "require_version": FIXED_VERSION}
            assert client.post(path, data=form).status_code == 403, path  # no token
            form = {**form, "csrf": token, "require_version": "v" * 201}
            too_long = client.post(path, data=form)
            assert too_long.status_code == 400, path
            assert "a version is at most 200 characters" in too_long.text
    assert _required_versions(seeded_db.url) == []
