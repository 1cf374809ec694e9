"""The read-only pages: overview, events (filter, search, paging), event detail and the
body downloads."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inbox._operations.models import Delivery, EventDetail, EventPage
from inbox.console import _api
from inbox.console._charts import activity_charts, legend
from inbox.console._filters import parse_filter
from inbox.console._render import body_view, render, url_for
from inbox.console._web import console_of, principal_of, signed_in

__all__ = [
    "OVERVIEW_REFRESH_SECONDS",
    "delivery_runs",
    "event_body",
    "event_detail",
    "events",
    "overview",
]

# How often the overview refreshes its numbers when JavaScript is on (static/live.js).
OVERVIEW_REFRESH_SECONDS = 5


@signed_in()
async def overview(request: Request) -> Response:
    console = console_of(request)
    settings = console.settings
    data = await console.pool.run(
        _api.overview,
        [s.name for s in settings.sources],
        settings.console.receiver_metrics,
    )
    charts = activity_charts(
        [("Last hour, per minute", data.hour), ("Last day, per 15 minutes", data.day)]
    )
    return render(
        request,
        "overview.html",
        {
            "status": data.status,
            "charts": charts,
            "legend": legend(),
            "metrics_configured": bool(settings.console.receiver_metrics),
            "live_refresh": OVERVIEW_REFRESH_SECONDS,
        },
    )


@signed_in()
async def events(request: Request) -> Response:
    console = console_of(request)
    text = request.query_params.get("q", "").strip()
    parsed = parse_filter(request.query_params)
    page: EventPage | None = None
    notice = None
    if text:
        found = await console.pool.run(_api.search, text)
        if len(found) == 1:
            return RedirectResponse(url_for(request, f"/events/{found[0].id}"), 303)
        page = EventPage(found, None)
        notice = f"{len(found)} events match {text!r}." if found else f"Nothing found for {text!r}."
    elif parsed.event_filter is not None:
        try:
            page = await console.pool.run(_api.events_page, parsed)
        except ValueError as exc:  # a cursor that is not one of ours (it comes in the URL)
            parsed.errors["cursor"] = str(exc)
    query = dict(parsed.query)
    if request.query_params.get("limit"):
        query["limit"] = str(parsed.limit)
    next_page = None
    if page is not None and page.next_cursor is not None:
        next_page = url_for(request, "/events", **query, cursor=page.next_cursor)
    return render(
        request,
        "events.html",
        {
            "filter": parsed,
            "page": page,
            "notice": notice,
            "next_page": next_page,
            "first_page": url_for(request, "/events", **query) if parsed.cursor else None,
        },
        status=400 if parsed.errors else 200,
    )


def _event_id(request: Request) -> int:
    raw = request.path_params["event_id"]
    if not raw.isdigit() or len(raw) > 18:
        raise HTTPException(404, f"no event {raw!r}: an event id is a number")
    return int(raw)


async def _detail(request: Request) -> EventDetail:
    console = console_of(request)
    settings = console.settings
    redact = [*settings.console.redact_headers, *settings.receiver.redact_headers]
    return await console.pool.run(_api.event_detail, _event_id(request), redact)


@signed_in()
async def event_detail(request: Request) -> Response:
    detail = await _detail(request)
    show_bodies = principal_of(request).may_see_bodies(console_of(request).bodies)
    deliveries = [
        {
            "delivery": group[0],
            "last": group[-1],
            "count": len(group),
            "view": body_view(group[0].body) if show_bodies and group[0].body is not None else None,
        }
        for group in delivery_runs(detail.deliveries)
    ]
    return render(
        request,
        "event.html",
        {
            "e": detail,
            "show_bodies": show_bodies,
            "body": body_view(detail.body) if show_bodies else None,
            "deliveries": deliveries,
        },
    )


def delivery_runs(deliveries: Sequence[Delivery]) -> list[list[Delivery]]:
    """The deliveries in order, a run of consecutive repeats with the same body as one
    group: a provider retrying for an hour shows as one line with a count, not a line a
    try. The first delivery (the event itself) stays a group of its own."""
    runs: list[list[Delivery]] = []
    for n, delivery in enumerate(deliveries):
        if n > 1 and runs[-1][-1].body_sha256 == delivery.body_sha256:
            runs[-1].append(delivery)
        else:
            runs.append([delivery])
    return runs


def _download(body: bytes, name: str) -> Response:
    return Response(
        body,
        media_type="application/octet-stream",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


@signed_in()
async def event_body(request: Request) -> Response:
    """The exact bytes of the event, or of one repeat delivery: as the page's body rule."""
    if not principal_of(request).may_see_bodies(console_of(request).bodies):
        raise HTTPException(403, "event bodies are not shown to your role")
    event_id = _event_id(request)
    delivery = request.path_params.get("delivery")
    if delivery is None:
        detail = await _detail(request)
        return _download(detail.body, f"event-{event_id}.bin")
    if not delivery.isdigit() or len(delivery) > 18:
        raise HTTPException(404, f"event {event_id} has no delivery {delivery!r}")
    body = await console_of(request).pool.run(_api.delivery_body, event_id, int(delivery))
    return _download(body, f"event-{event_id}-delivery-{delivery}.bin")
