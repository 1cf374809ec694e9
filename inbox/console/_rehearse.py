"""The replay's "Rehearse" step: before the confirm, an operator asks for the selection's
events to run through the handlers in transactions that roll back, and reads what each
would do and write.

The console has no handlers, so the request is queued in the database and a worker whose
router handles the events' sources runs it (processors/_rehearsal/requests.py); the page
shows its progress until the report is there. A request no worker finishes within
``TIME_LIMIT_SECONDS`` expires, and none is queued while no such worker runs.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inbox.console import _api
from inbox.console._actions import REHEARSE_MAX, _ids, _preview
from inbox.console._filters import parse_filter
from inbox.console._render import render, url_for
from inbox.console._web import checked_form, console_of, principal_of, signed_in

__all__ = ["TIME_LIMIT_SECONDS", "rehearsal_page", "rehearse"]

# How long a worker has to take and finish a request (a handler's own limit bounds each
# event); past it, the page says it expired.
TIME_LIMIT_SECONDS = 300.0
REFRESH_SECONDS = 1


def no_worker(sources: list[str], then: str) -> str:
    """Why no rehearsal runs now, and ``then``: what follows from it."""
    names = ", ".join(sources) or "these events"
    return (
        f"No worker with the handlers of {names} is running: a rehearsal runs on a worker"
        " whose router handles its events' sources (start one with `inbox worker`), since"
        f" the console has no handlers of its own. {then}"
    )


@signed_in(operator=True)
async def rehearse(request: Request) -> Response:
    form = await checked_form(request)
    parsed = parse_filter(form)
    ids = _ids(form)
    if parsed.event_filter is None or (ids is None and parsed.is_empty()):
        return await _preview(request, parsed, ids, status=400)
    pool = console_of(request).pool
    selected = (await pool.run(_api.rehearsal_selection, parsed, ids))[:REHEARSE_MAX]
    if not selected:
        return await _preview(
            request,
            parsed,
            ids,
            error="Nothing to rehearse: the filter selects no event.",
            status=409,
        )
    sources, workers = await pool.run(_api.rehearsal_workers, selected)
    if not workers:
        return await _preview(
            request, parsed, ids, error=no_worker(sources, "Nothing was queued."), status=409
        )
    request_id = await pool.run(
        _api.request_rehearsal,
        selection=parsed.event_filter,
        event_ids=selected,
        form={"query": parsed.query, "ids": ids},
        timeout_seconds=TIME_LIMIT_SECONDS,
        actor=principal_of(request).name,
        via="console",
    )
    return RedirectResponse(url_for(request, f"/replay/rehearsals/{request_id}"), 303)


@signed_in(operator=True)
async def rehearsal_page(request: Request) -> Response:
    raw = request.path_params["request_id"]
    if not raw.isdigit() or len(raw) > 18:
        raise HTTPException(404, f"no rehearsal {raw!r}")
    pool = console_of(request).pool
    asked = await pool.run(_api.rehearsal_request, int(raw))
    waiting = None
    if asked.state == "queued":
        _, workers = await pool.run(_api.rehearsal_workers, asked.event_ids)
        if not workers:
            waiting = no_worker(asked.sources, "It waits for one until its time limit.")
    query = asked.form.get("query") or {}
    hidden = [*query.items(), *(("ids", str(i)) for i in asked.form.get("ids") or ())]
    return render(
        request,
        "rehearsal.html",
        {
            "r": asked,
            "report": asked.report,
            "waiting": waiting,
            "hidden": hidden,
            "live_refresh": False if asked.finished else REFRESH_SECONDS,
        },
    )
