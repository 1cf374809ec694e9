"""The pages that change something (dead-letter retry, replay) and the audit trail."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from inbox.console import _api
from inbox.console._filters import parse_filter
from inbox.console._render import render
from inbox.console._web import console_of, signed_in

__all__ = [
    "audit",
    "dead",
    "dead_retry",
    "replay_form",
    "replay_preview",
    "replay_run",
    "replay_start",
]


@signed_in()
async def dead(request: Request) -> Response:
    parsed = parse_filter(request.query_params, state="dead")
    page = None
    if parsed.event_filter is not None:
        page = await console_of(request).pool.run(_api.events_page, parsed)
    return render(
        request,
        "dead.html",
        {"filter": parsed, "page": page, "error": None},
        status=400 if parsed.errors else 200,
    )


@signed_in(operator=True)
async def dead_retry(request: Request) -> Response:
    raise HTTPException(503, "not yet")


@signed_in()
async def replay_form(request: Request) -> Response:
    parsed = parse_filter(request.query_params)
    return render(request, "replay.html", {"filter": parsed})


@signed_in(operator=True)
async def replay_preview(request: Request) -> Response:
    raise HTTPException(503, "not yet")


@signed_in(operator=True)
async def replay_start(request: Request) -> Response:
    raise HTTPException(503, "not yet")


@signed_in()
async def replay_run(request: Request) -> Response:
    raise HTTPException(404, "not yet")


@signed_in()
async def audit(request: Request) -> Response:
    return render(request, "audit.html", {"rows": []})
