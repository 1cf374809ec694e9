"""Replays and dead-letter retries from the console, end to end: preview numbers, the
required reason, the include-processed confirmation, the run recorded with the console
user, and its progress after a real worker ran."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from tests._wait import rows, scalar
from tests.console._seed import PAGING_COUNT, Seeded, settle
from tests.console.conftest import OPERATOR, VIEWER, csrf_of, sign_in


def _number(html: str, element_id: str) -> int:
    match = re.search(rf'id="{element_id}">(\d+)<', html)
    assert match, f"no #{element_id}"
    return int(match.group(1))


def test_replay_by_filter_end_to_end(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    assert 'id="replay-filter"' in client.get("/replay").text
    token = csrf_of(client, "/replay")
    chosen = {"csrf": token, "source": "shop", "type": "order.paid"}

    preview = client.post("/replay/preview", data=chosen)
    assert preview.status_code == 200
    html = preview.text
    assert 'id="replay-preview"' in html
    assert _number(html, "replay-count") == PAGING_COUNT + 1
    assert _number(html, "replay-processed") == PAGING_COUNT
    assert _number(html, "replay-pending") == 1  # the late event keeps its own work
    assert _number(html, "replay-queued") == PAGING_COUNT
    sample = html.split('<table id="replay-sample"', 1)[1].split("</table>", 1)[0]
    assert sample.count('<tr class="event') == 20
    assert 'id="replay-confirm"' in html
    assert 'id="replay-start"' in html
    assert 'name="include_processed"' in html
    assert '<input type="hidden" name="source" value="shop">' in html
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0  # a dry run

    no_reason = client.post("/replay", data={**chosen, "reason": "  "})
    assert no_reason.status_code == 400
    assert "needs a reason" in no_reason.text
    unconfirmed = client.post("/replay", data={**chosen, "reason": "fix #412"})
    assert unconfirmed.status_code == 400
    assert f"{PAGING_COUNT} of the selected events were already processed" in unconfirmed.text
    assert "fix #412" in unconfirmed.text  # the reason typed is kept
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0

    started = client.post(
        "/replay",
        data={**chosen, "reason": "fix #412", "include_processed": "1"},
        follow_redirects=False,
    )
    assert started.status_code == 303
    run_url = started.headers["location"]
    run_id = int(run_url.rsplit("/", 1)[1])
    [(kind, who, via, reason, selected, queued)] = rows(
        seeded_db.url,
        "select kind, created_by, via, reason, selected, queued from inbox_replays",
    )
    assert (kind, who, via, reason) == ("replay", "olga", "console", "fix #412")
    assert (selected, queued) == (PAGING_COUNT + 1, PAGING_COUNT)

    progress = client.get(run_url).text
    assert f"<title>Replay run #{run_id} · pg-inbox console</title>" in progress
    assert f"<h1>Replay run #{run_id}</h1>" in progress
    assert 'id="replay-run"' in progress
    assert _number(progress, "run-pending") == PAGING_COUNT
    assert _number(progress, "run-processed") == 0
    assert 'class="run-who">olga (via console)' in progress

    settle(seeded_db.url)
    done = client.get(run_url).text
    assert _number(done, "run-processed") == PAGING_COUNT
    assert _number(done, "run-failed") == 0
    assert _number(done, "run-pending") == 0
    assert "Finished." in done

    audit = client.get("/audit").text
    [row] = re.findall(r'<tr class="audit-row">(.*?)</tr>', audit, re.S)
    assert '<td class="audit-who">olga</td>' in row
    assert f">Replay run #{run_id}</a>" in row
    assert '<td class="audit-reason">fix #412</td>' in row
    assert '<td class="audit-via">console</td>' in row

    detail = client.get(f"/events/{seeded_db.paging_ids[0]}").text
    replays = detail.split('<section id="replays">', 1)[1].split("</section>", 1)[0]
    assert f"Replay run #{run_id}</a>" in replays
    assert "fix #412" in replays
    assert _replayed_ids(client) == sorted(seeded_db.paging_ids, reverse=True)


def _replayed_ids(client: TestClient) -> list[int]:
    html = client.get("/events?replayed=1&limit=100").text
    return [int(i) for i in re.findall(r'class="event-link" href="/events/(\d+)"', html)]


def test_replay_one_event_from_its_page(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    detail = client.get(f"/events/{seeded_db.key_event}").text
    form = detail.split('<form id="replay-event"', 1)[1].split("</form>", 1)[0]
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
    preview = client.post("/replay/preview", data=fields)
    assert _number(preview.text, "replay-count") == 1
    hidden = dict(
        re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)">',
            preview.text.split('<form id="replay-confirm"', 1)[1],
        )
    )
    assert hidden["ids"] == str(seeded_db.key_event)
    started = client.post(
        "/replay",
        data={**hidden, "reason": "customer asked", "include_processed": "1"},
        follow_redirects=False,
    )
    assert started.status_code == 303
    assert rows(seeded_db.url, "select filter->'ids' from inbox_replays") == [
        ([seeded_db.key_event],)
    ]


def test_an_empty_filter_is_refused(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    token = csrf_of(client, "/replay")
    for path in ("/replay/preview", "/replay"):
        refused = client.post(path, data={"csrf": token, "reason": "everything"})
        assert refused.status_code == 400
        assert "choose at least one filter" in refused.text
    bad = client.post("/replay/preview", data={"csrf": token, "after": "tomorrowish"})
    assert bad.status_code == 400
    assert 'data-field="after"' in bad.text
    nothing = client.post("/replay/preview", data={"csrf": token, "source": "nobody"})
    assert _number(nothing.text, "replay-count") == 0
    assert 'id="replay-nothing"' in nothing.text
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0


def test_retry_dead_letters_with_a_reason(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    page = client.get("/dead").text
    listed = re.findall(r'name="ids" value="(\d+)"', page)
    assert sorted(int(i) for i in listed) == sorted([*seeded_db.dead_ids, seeded_db.xss_event])
    token = csrf_of(client, "/dead")
    ids = [str(i) for i in seeded_db.dead_ids]
    no_reason = client.post("/dead/retry", data={"ids": ids, "csrf": token, "reason": ""})
    assert no_reason.status_code == 400
    assert "needs a reason" in no_reason.text
    none_chosen = client.post("/dead/retry", data={"csrf": token, "reason": "parser fixed"})
    assert none_chosen.status_code == 400
    assert "Select at least one" in none_chosen.text
    assert scalar(seeded_db.url, "select count(*) from inbox_replays") == 0

    started = client.post(
        "/dead/retry",
        data={"ids": ids, "csrf": token, "reason": "parser fixed"},
        follow_redirects=False,
    )
    assert started.status_code == 303
    [(kind, who, via, selected)] = rows(
        seeded_db.url, "select kind, created_by, via, selected from inbox_replays"
    )
    assert (kind, who, via, selected) == ("dead-retry", "olga", "console", 3)
    run_url = started.headers["location"]
    run_page = client.get(run_url).text
    assert _number(run_page, "run-pending") == 3
    assert 'data-refresh="1"' in run_page  # live.js asks again every second...
    assert "This page updates itself every second until the run has finished" in run_page
    assert "Reload to update" not in run_page
    assert "<title>Dead-letter retry #" in run_page
    assert "<h1>Dead-letter retry #" in run_page

    settle(seeded_db.url)  # the handler still fails: dead again after two attempts
    done = client.get(run_url).text
    assert _number(done, "run-failed") == 3
    assert _number(done, "run-processed") == 0
    assert _number(done, "run-pending") == 0
    assert "data-refresh" not in done  # ...until it has finished
    assert "live.js" not in done
    audit = client.get("/audit").text
    assert ">Dead-letter retry #" in audit
    assert '<td class="audit-who">olga</td>' in audit


def test_retry_all_dead_letters_shown(client: TestClient, seeded_db: Seeded) -> None:
    """Without script (the CSP allows none), "retry all shown" is a second submit button:
    the page's rows travel as hidden ``shown`` fields, and its scope picks them."""
    sign_in(client, OPERATOR)
    page = client.get("/dead?source=shop").text
    form = page.split('<form id="dead-retry"', 1)[1].split("</form>", 1)[0]
    shown = re.findall(r'<input type="hidden" name="shown" value="(\d+)">', form)
    assert sorted(int(i) for i in shown) == sorted(seeded_db.dead_ids)
    assert f'name="scope" value="shown" id="retry-shown">Retry all {len(shown)} shown<' in form
    token = csrf_of(client, "/dead")
    fields = {"csrf": token, "reason": "parser fixed", "source": "shop", "shown": shown}
    none_shown = client.post("/dead/retry", data={**fields, "shown": [], "scope": "shown"})
    assert none_shown.status_code == 400
    assert "No dead letter is shown" in none_shown.text
    # The shown rows, not the one ticked: the button says which list the server takes.
    ticked = {**fields, "ids": [str(seeded_db.xss_event)]}
    started = client.post("/dead/retry", data={**ticked, "scope": "shown"}, follow_redirects=False)
    assert started.status_code == 303
    [(kind, selected, filter_ids)] = rows(
        seeded_db.url, "select kind, selected, filter->'ids' from inbox_replays"
    )
    assert (kind, selected, sorted(filter_ids)) == ("dead-retry", 3, sorted(seeded_db.dead_ids))
    assert (
        scalar(
            seeded_db.url, "select state from inbox_work where event_id = %s", [seeded_db.xss_event]
        )
        == "dead"
    )


def test_a_dead_letter_skip_has_a_page_of_its_own(client: TestClient, seeded_db: Seeded) -> None:
    """A skip (``inbox dead skip``) is audited as a run, and its page must say what it was
    and did: no handler ran, so it has no progress, only the ids it was given, how many of
    them it skipped, who and why."""
    from inbox.queries import skip_dead

    dead, not_dead = seeded_db.dead_ids[0], seeded_db.pending_id
    result = skip_dead(seeded_db.url, ids=[dead, not_dead], reason="bad data", actor="olga")
    assert result.skipped == [dead]
    sign_in(client, VIEWER)
    page = client.get(f"/replay/runs/{result.skip_id}")
    assert page.status_code == 200
    html = page.text
    assert f"<title>Dead-letter skip #{result.skip_id} · pg-inbox console</title>" in html
    assert f"<h1>Dead-letter skip #{result.skip_id}</h1>" in html
    assert "Replay run" not in html
    assert _number(html, "run-skipped") == 1
    assert "of 2</span>" in html  # skipped 1 of the 2 ids it was given
    assert 'class="run-who">olga (via api)' in html
    assert '<dd class="run-reason">bad data</dd>' in html
    ids = html.split('id="run-ids">', 1)[1].split("</dd>", 1)[0]
    assert re.findall(r'href="/events/(\d+)"', ids) == [str(dead), str(not_dead)]
    assert 'id="run-processed"' not in html  # no handler ran: nothing to count as processed
    assert "Finished" in html

    audit = client.get("/audit").text
    assert f">Dead-letter skip #{result.skip_id}</a>" in audit
    detail = client.get(f"/events/{dead}").text
    runs = detail.split('<section id="replays">', 1)[1].split("</section>", 1)[0]
    assert f">Dead-letter skip #{result.skip_id}</a>" in runs


def test_a_rehearsal_has_a_page_of_its_counts(client: TestClient, seeded_db: Seeded) -> None:
    """A rehearsal (``inbox replay --rehearse``) queued nothing: its page shows what its
    events would have done, not a replay's progress."""
    from inbox._operations.rehearsal import record_rehearsal
    from inbox.queries import EventFilter, replay_runs

    outcome = {"succeeded": 3, "failed": 1, "retry": 0, "skipped": 2}
    run_id = record_rehearsal(
        seeded_db.url, selection=EventFilter(source="stripe"), selected=6, outcome=outcome
    )
    assert replay_runs(seeded_db.url, limit=1)[0].outcome == outcome
    sign_in(client, VIEWER)
    html = client.get(f"/replay/runs/{run_id}").text
    assert f"<h1>Rehearsal #{run_id}</h1>" in html
    assert re.findall(r'(\w+): <strong class="run-outcome">(\d+)<', html) == [
        ("Succeeded", "3"),
        ("Failed", "1"),
        ("Retry", "0"),
        ("Skipped", "2"),
    ]
    assert 'id="run-processed"' not in html
    assert "rolled back; nothing was queued" in html
    assert '<dd class="run-reason">(no reason given)</dd>' in html
    assert f">Rehearsal #{run_id}</a>" in client.get("/audit").text


def test_every_audited_kind_has_one_name() -> None:
    from typing import get_args

    from inbox._operations.records import AuditKind
    from inbox.console._render import KIND_NAMES

    assert set(KIND_NAMES) == set(get_args(AuditKind))
    assert len(set(KIND_NAMES.values())) == len(KIND_NAMES)
