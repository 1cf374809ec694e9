"""The read-only pages over HTTP: overview, events (filters, paging, search), detail,
downloads, 404s and malformed filters."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from tests.console._seed import PAGING_COUNT, TRACE_ID, Seeded, hold_an_ordered_key, traced_event
from tests.console.conftest import OPERATOR, VIEWER, sign_in


def _ids(html: str, table: str = "events") -> list[int]:
    body = html.split(f'<table id="{table}"', 1)[1].split("</table>", 1)[0]
    return [int(i) for i in re.findall(r'class="event-link" href="[^"]*/events/(\d+)"', body)]


def _next_href(html: str) -> str | None:
    match = re.search(r'<a id="next-page" href="([^"]+)"', html)
    return match.group(1).replace("&amp;", "&") if match else None


def test_overview(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    page = client.get("/")
    assert page.status_code == 200
    html = page.text
    for source in ("shop", "stripe", "xss", "bin", "github", "slack"):
        assert f">{source}</a></td>" in html
    shop = html.split(">shop</a></td>", 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r'<td class="num">(.*?)</td>', shop)
    # received 1 h, 24 h, duplicates 1 h, 24 h, pending, retrying, dead (a link), ...
    assert cells[0] == str(PAGING_COUNT + 3 + 1)
    assert cells[4] == "1"  # the late event
    assert f">{len(seeded_db.dead_ids)}</a>" in cells[6]
    assert 'id="health"' in html
    assert "dead letter" in html
    assert html.count('<svg class="chart"') == 2
    assert 'class="series received"' in html
    assert 'id="workers"' in html
    assert ">Rejected</th>" not in html  # no receiver metrics configured
    assert 'data-refresh="5"' in html


def test_events_pages_through_everything_once(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    seen: list[int] = []
    url: str | None = "/events?source=shop&type=order.paid&limit=25"
    pages = 0
    while url:
        html = client.get(url).text
        seen += _ids(html)
        url = _next_href(html)
        if url:
            assert "source=shop" in url
            assert "type=order.paid" in url
            assert "limit=25" in url
        pages += 1
    expected = sorted([*seeded_db.paging_ids, seeded_db.pending_id], reverse=True)
    assert seen == expected
    assert pages == 3


def test_event_filters(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    assert _ids(client.get("/events?state=dead").text) == sorted(
        [*seeded_db.dead_ids, seeded_db.xss_event], reverse=True
    )
    assert _ids(client.get("/events?source=shop&type=order.b*").text) == sorted(
        seeded_db.dead_ids, reverse=True
    )
    assert _ids(client.get("/events?repeats=1").text) == [seeded_db.key_event]
    assert _ids(client.get("/events?state=pending").text) == [seeded_db.pending_id]
    assert _ids(client.get("/events?after=1h&source=stripe").text) == [seeded_db.key_event]
    assert _ids(client.get("/events?before=1h&source=stripe").text) == []
    assert _ids(client.get("/events?replayed=1").text) == []
    selected = client.get("/events?state=dead&repeats=1").text
    assert '<option value="dead" selected>' in selected
    assert 'name="repeats" value="1" checked' in selected


def test_malformed_filters_say_what_is_wrong(client: TestClient) -> None:
    sign_in(client, VIEWER)
    cases = {
        "after=yesterday-ish": ("after", "not a time"),
        "state=sleeping": ("state", "unknown state"),
        "limit=0": ("limit", "whole number"),
        "limit=abc": ("limit", "whole number"),
        "cursor=garbage": ("cursor", "not a page cursor"),
        "after=1h&before=2h": ("after", "empty"),
    }
    for query, (field, message) in cases.items():
        page = client.get(f"/events?{query}")
        assert page.status_code == 400, query
        assert 'id="filter-errors"' in page.text, query
        assert f'data-field="{field}"' in page.text, query
        assert message in page.text, query
    assert client.get("/dead?after=nope").status_code == 400


def test_search(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    detail = f"/events/{seeded_db.key_event}"
    for text in (str(seeded_db.key_event), "stripe:evt_123", "evt_123", "  evt_123 "):
        found = client.get("/events", params={"q": text}, follow_redirects=False)
        assert found.status_code == 303, text
        assert found.headers["location"] == detail
    several = client.get("/events", params={"q": seeded_db.shared_key})
    assert several.status_code == 200
    assert _ids(several.text) == sorted(seeded_db.shared_key_ids, reverse=True)
    assert "2 events match" in several.text
    nothing = client.get("/events", params={"q": "evt_nope"})
    assert nothing.status_code == 200
    assert "Nothing found for &#39;evt_nope&#39;" in nothing.text
    assert 'form id="search"' in nothing.text
    assert 'value="evt_nope"' in nothing.text


def test_event_detail(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    html = client.get(f"/events/{seeded_db.key_event}").text
    assert 'id="event-meta"' in html
    assert "evt_123" in html
    assert '<th>authorization</th><td class="redacted">[redacted]</td>' in html
    assert "<th>stripe-signature</th><td>t=1,v1=abc</td>" in html
    assert 'data-kind="json"' in html
    deliveries = html.split('<section id="deliveries">', 1)[1].split("</section>", 1)[0]
    assert deliveries.count('<li class="delivery') == 3
    assert deliveries.count('class="delivery differs"') == 1
    assert "side-by-side" in deliveries
    assert "&#34;amount&#34;: 4300" in deliveries
    attempts = html.split('<section id="attempts">', 1)[1].split("</section>", 1)[0]
    assert attempts.count('<tr class="attempt') == 2
    assert "card_declined: amount 4200 does not match the invoice" in attempts
    assert 'id="replay-event"' in html
    replays = html.split('<section id="replays">', 1)[1].split("</section>", 1)[0]
    assert '<p class="empty" id="no-runs">No replay, retry or skip has included' in replays
    assert "<li" not in replays  # a sentence, not a list of one bullet


def test_repeated_deliveries_are_grouped(client: TestClient, seeded_db: Seeded) -> None:
    """A provider retrying for an hour: consecutive deliveries with the same body are one
    line with a count and the first and last time, in order with those that differ."""
    from inbox import InboxWriter

    with InboxWriter(seeded_db.url) as writer:
        bodies = [b"{}"] * 21 + [b'{"v": 2}'] * 2 + [b"{}"]
        ids = [writer.write("github", "retried", body).event_id for body in bodies]
    event = ids[0]  # every later write was a delivery of it
    sign_in(client, OPERATOR)
    html = client.get(f"/events/{event}").text
    deliveries = html.split('<section id="deliveries">', 1)[1].split("</section>", 1)[0]
    assert "<h2>Deliveries (24)</h2>" in deliveries
    lines = re.findall(
        r'<li class="delivery([^"]*)" data-count="(\d+)">(.*?)</li>', deliveries, re.S
    )
    assert [(classes.strip(), int(count)) for classes, count, _ in lines] == [
        ("original", 1),
        ("", 20),
        ("differs", 2),
        ("", 1),
    ]
    same = lines[1][2]
    assert '<strong class="repeat-count">\N{MULTIPLICATION SIGN} 20</strong>' in same
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( to .*)? UTC", same), same
    assert "repeat-count" not in lines[3][2]
    assert lines[2][2].count("download-delivery") == 1  # one body shown for the two


def test_a_stored_traceback_is_shown(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    html = client.get(f"/events/{seeded_db.xss_event}").text
    # The worker stored one with each failed attempt; each shows escaped, never run.
    tracebacks = re.findall(r'<pre class="attempt-traceback">(.*?)</pre>', html, re.S)
    assert tracebacks
    for traceback in tracebacks:
        assert traceback.startswith("Traceback (most recent call last):")
        assert traceback.rstrip().endswith(
            "ValueError: &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
        )


def test_binary_body_is_hex(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    html = client.get(f"/events/{seeded_db.binary_event}").text
    assert 'data-kind="hex"' in html
    assert "00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f  ................" in html


def test_downloads_are_the_exact_bytes(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, OPERATOR)
    body = client.get(f"/events/{seeded_db.binary_event}/body")
    assert body.content == bytes(range(256))
    assert body.headers["content-type"] == "application/octet-stream"
    assert body.headers["content-disposition"] == (
        f'attachment; filename="event-{seeded_db.binary_event}.bin"'
    )
    html = client.get(f"/events/{seeded_db.key_event}").text
    [link] = re.findall(r'class="download-delivery" href="([^"]+)"', html)
    repeat = client.get(link)
    assert repeat.status_code == 200
    assert b'"amount": 4300' in repeat.content
    other = f"/events/{seeded_db.binary_event}/deliveries/{link.split('/')[-2]}/body"
    assert client.get(other).status_code == 404  # a delivery of another event


def test_not_found_pages(client: TestClient) -> None:
    sign_in(client, VIEWER)
    for path in [
        "/events/987654",
        "/events/abc",
        "/events/99999999999999999999",
        "/replay/runs/987654",
        "/nowhere",
    ]:
        page = client.get(path)
        assert page.status_code == 404, path
        assert 'id="not-found"' in page.text, path
    assert "no event 987654" in client.get("/events/987654").text
    sign_in(client, OPERATOR)
    assert client.get("/events/987654/body").status_code == 404


def test_overview_shows_rejections_when_receiver_metrics_are_configured(
    seeded_db: Seeded, unused_tcp_port: int
) -> None:
    from inbox.console import create_app
    from tests.console.conftest import make_settings

    metrics = f"http://127.0.0.1:{unused_tcp_port}/metrics"  # nothing listens there
    app = create_app(make_settings(receiver_metrics=[metrics]), dsn=seeded_db.url)
    with TestClient(app) as client:
        sign_in(client, VIEWER)
        html = client.get("/").text
    assert '<th class="num" rowspan="2">Rejected</th>' in html
    assert f"receiver metrics unavailable: {metrics}" in html


def test_audit_pages(client: TestClient, seeded_db: Seeded) -> None:
    from inbox import queries

    for n in range(55):
        queries.replay(seeded_db.url, reason=f"run {n}", ids=[seeded_db.key_event], actor="cli")
    sign_in(client, VIEWER)
    first = client.get("/audit").text
    assert first.count('<tr class="audit-row">') == 50
    assert "run 54" in first
    older = _next_href(first)
    assert older is not None
    second = client.get(older).text
    assert second.count('<tr class="audit-row">') == 5
    assert "run 0<" in second
    assert _next_href(second) is None
    bad = client.get("/audit?cursor=nonsense")
    assert bad.status_code == 400
    assert "not a page cursor" in bad.text


def test_overview_counts_held_ordered_keys(client: TestClient, seeded_db: Seeded) -> None:
    sign_in(client, VIEWER)
    assert 'id="held"' not in client.get("/").text
    hold_an_ordered_key(seeded_db.url)
    held = client.get("/").text.split('id="held"', 1)[1].split("</p>", 1)[0]
    assert "<strong>1</strong>" in held


def test_an_event_shows_the_trace_of_its_receipt(client: TestClient, seeded_db: Seeded) -> None:
    traced = traced_event(seeded_db.url)
    sign_in(client, VIEWER)
    assert f"<dt>Trace</dt><dd><code>{TRACE_ID}</code></dd>" in client.get(f"/events/{traced}").text
    assert "<dt>Trace</dt>" not in client.get(f"/events/{seeded_db.key_event}").text
