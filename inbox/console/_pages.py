"""The read-only pages: overview, events (filter, search, paging), event detail and the
body downloads."""

from __future__ import annotations

from dataclasses import replace

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inbox._operator_models import EventDetail, EventPage
from inbox.console import _api
from inbox.console._charts import activity_charts
from inbox.console._filters import parse_filter
from inbox.console._render import body_view, render, url_for
from inbox.console._web import console_of, principal_of, signed_in

__all__ = ["event_body", "event_detail", "events", "overview"]


@signed_in()
async def overview(request: Request) -> Response:
    console = console_of(request)
    settings = console.settings
    data = await console.pool.run(
        _api.overview,
        [s.name for s in settings.sources],
        settings.console.receiver_metrics,
    )
    return render(
        request,
        "overview.html",
        {
            "status": data.status,
            "charts": activity_charts(data.activity),
            "metrics_configured": bool(settings.console.receiver_metrics),
            "live_refresh": True,
        },
    )


def _page_of(request: Request, page: EventPage, query: dict[str, str]) -> str | None:
    if page.next_before is None:
        return None
    return url_for(
        request,
        request.url.path[len(request.scope.get("root_path", "")) :],
        **query,
        cursor=str(page.next_before),
    )


@signed_in()
async def events(request: Request) -> Response:
    console = console_of(request)
    text = request.query_params.get("q", "").strip()
    parsed = parse_filter(request.query_params)
    page: EventPage | None = None
    notice = None
    if text:
        ids = await console.pool.run(_api.search, text)
        if len(ids) == 1:
            return RedirectResponse(url_for(request, f"/events/{ids[0]}"), 303)
        page = await console.pool.run(_api.events_by_id, ids) if ids else EventPage([], None)
        notice = f"{len(ids)} events match {text!r}." if ids else f"Nothing found for {text!r}."
    elif parsed.event_filter is not None:
        page = await console.pool.run(_api.events_page, parsed)
        if parsed.repeats:
            # Until the API filters repeats itself: the page keeps its cursor, so paging
            # stays correct, a page may just hold fewer rows.
            page = replace(page, events=[e for e in page.events if e.deliveries > 1])
    query = dict(parsed.query)
    if request.query_params.get("limit"):
        query["limit"] = str(parsed.limit)
    return render(
        request,
        "events.html",
        {
            "filter": parsed,
            "page": page,
            "notice": notice,
            "next_page": _page_of(request, page, query) if page and not text else None,
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
    redact = console.settings.receiver.redact_headers
    return await console.pool.run(_api.event_detail, _event_id(request), redact)


@signed_in()
async def event_detail(request: Request) -> Response:
    detail = await _detail(request)
    principal = principal_of(request)
    show_bodies = principal.may_see_bodies(console_of(request).bodies)
    original = body_view(detail.body) if show_bodies else None
    deliveries = [
        {
            "n": n,
            "delivery": d,
            "view": body_view(d.body) if show_bodies and d.body is not None else None,
        }
        for n, d in enumerate(detail.deliveries)
    ]
    replays = sorted({a.replay_id: a.replay_reason for a in detail.attempts if a.replay_id}.items())
    if detail.work and detail.work.replay_id and detail.work.replay_id not in dict(replays):
        replays.append((detail.work.replay_id, None))
    return render(
        request,
        "event.html",
        {
            "e": detail,
            "show_bodies": show_bodies,
            "body": original,
            "deliveries": deliveries,
            "replays": replays,
        },
    )


def _download(request: Request, event_id: int, body: bytes, name: str) -> Response:
    return Response(
        body,
        media_type="application/octet-stream",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


@signed_in()
async def event_body(request: Request) -> Response:
    if not principal_of(request).may_see_bodies(console_of(request).bodies):
        raise HTTPException(403, "event bodies are not shown to your role")
    detail = await _detail(request)
    delivery = request.path_params.get("delivery")
    if delivery is None:
        return _download(request, detail.id, detail.body, f"event-{detail.id}.bin")
    if not delivery.isdigit() or int(delivery) >= len(detail.deliveries):
        raise HTTPException(404, f"event {detail.id} has no delivery {delivery}")
    chosen = detail.deliveries[int(delivery)]
    body = detail.body if chosen.body is None else chosen.body
    return _download(request, detail.id, body, f"event-{detail.id}-delivery-{delivery}.bin")
