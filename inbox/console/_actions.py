"""The pages that change something (dead-letter retry, replay) and the audit trail.

A replay goes filter → preview (a dry run: how many, how many already processed, the
first 20, the running workers by version) → confirm with a reason, and optionally the
version of the code that must run it → the run's progress. Every change is a POST with the
CSRF token, by an operator; the run records the console user and ``via = "console"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.datastructures import ImmutableMultiDict
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inbox._core.errors import RefusedError
from inbox._operations.replay import ReplayResult
from inbox.console import _api
from inbox.console._filters import ParsedFilter, parse_filter
from inbox.console._render import render, url_for
from inbox.console._web import checked_form, console_of, principal_of, signed_in

__all__ = [
    "audit",
    "dead",
    "dead_retry",
    "replay_form",
    "replay_preview",
    "replay_run",
    "replay_start",
]

SAMPLE = 20
MAX_VERSION = 200  # inbox_workers.version's own limit: no running worker has a longer one
# A running replay's page asks again this often (static/live.js): a run of a few events
# ends within a second or two, and the page should say so when it does, not seconds later.
# Each refresh is one small indexed query, and stops when the run has finished.
RUN_REFRESH_SECONDS = 1
# A rehearsal (inbox.console._rehearse) runs the oldest events of the selection up to this
# many: its report is one page, read before a confirm, so a larger selection is rehearsed
# by its oldest part. Here because the preview says so, and _rehearse imports this module.
REHEARSE_MAX = 500


async def _dead_page(
    request: Request,
    parsed: ParsedFilter,
    *,
    error: str | None = None,
    status: int = 200,
    version: str | None = None,
) -> Response:
    pool = console_of(request).pool
    page = retry = None
    if parsed.event_filter is not None:
        try:
            page = await pool.run(_api.dead_page, parsed)
        except ValueError as exc:  # a cursor that is not one of ours (it comes in the URL)
            parsed.errors["cursor"] = str(exc)
    if page is not None and page.events and principal_of(request).is_operator:
        # What a retry of these would run on: the retry form offers the running versions.
        retry = await pool.run(_api.retry_preview, [e.id for e in page.events], version)
    query = dict(parsed.query)
    query.pop("state", None)
    if parsed.values["limit"]:
        query["limit"] = str(parsed.limit)
    next_page = None
    if page is not None and page.next_cursor is not None:
        next_page = url_for(request, "/dead", **query, cursor=page.next_cursor)
    return render(
        request,
        "dead.html",
        {
            "filter": parsed,
            "page": page,
            "error": error,
            "next_page": next_page,
            "retry": retry,
            "required": version,
        },
        status=400 if parsed.errors else status,
    )


@signed_in()
async def dead(request: Request) -> Response:
    return await _dead_page(request, parse_filter(request.query_params, state="dead"))


def _version(form: ImmutableMultiDict[str, str]) -> str | None:
    """The version of the code the operator requires (empty: any worker may run them)."""
    version = form.get("require_version", "").strip()
    if len(version) > MAX_VERSION:
        raise HTTPException(400, f"a version is at most {MAX_VERSION} characters")
    return version or None


def _not_running(version: str | None, result: ReplayResult) -> str | None:
    """Why a run requiring ``version`` is not started: no worker of it runs now (the form
    offered the running ones; one stopped since). The CLI may queue for a version still to
    be deployed; the console only for one the operator saw running."""
    if version is None or any(w.version == version for w in result.workers):
        return None
    return (
        f"No worker of version {version} is running now, so nothing was queued: choose one"
        " of the running versions below, or any worker."
    )


def _ids(form: ImmutableMultiDict[str, str], field: str = "ids") -> list[int] | None:
    raw = [v for v in form.getlist(field) if v.strip()]
    if not raw:
        return None
    if not all(v.strip().isdigit() and len(v.strip()) < 19 for v in raw):
        raise HTTPException(400, "an event id is a number")
    return sorted({int(v) for v in raw})


@signed_in(operator=True)
async def dead_retry(request: Request) -> Response:
    form = await checked_form(request)
    parsed = parse_filter(form, state="dead")
    # "Retry all shown" sends the page's rows as `shown`; the selection is `ids`. Either
    # way only those still dead are retried.
    every_shown = form.get("scope") == "shown"
    ids = _ids(form, "shown" if every_shown else "ids")
    reason = form.get("reason", "").strip()
    error = None
    if not ids:
        error = (
            "No dead letter is shown."
            if every_shown
            else "Select at least one dead letter to retry."
        )
    elif not reason:
        error = "A retry needs a reason (it is recorded in the audit)."
    version = _version(form)
    if error:
        return await _dead_page(request, parsed, error=error, status=400, version=version)
    assert ids is not None
    pool = console_of(request).pool
    gone = _not_running(version, await pool.run(_api.retry_preview, ids, version))
    if gone:
        return await _dead_page(request, parsed, error=gone, status=409)
    result = await pool.run(_api.retry_dead, ids, reason, principal_of(request).name, version)
    if result.replay_id is None:
        return await _dead_page(
            request, parsed, error="None of the selected events is dead any more.", status=409
        )
    return RedirectResponse(url_for(request, f"/replay/runs/{result.replay_id}"), 303)


@signed_in()
async def replay_form(request: Request) -> Response:
    parsed = parse_filter(request.query_params)
    return render(request, "replay.html", {"filter": parsed}, status=400 if parsed.errors else 200)


def _hidden(parsed: ParsedFilter, ids: Sequence[int] | None) -> list[tuple[str, str]]:
    """The selection as hidden fields of the confirm form (the same filter as previewed)."""
    fields = list(parsed.query.items())
    fields += [("ids", str(i)) for i in ids or ()]
    return fields


async def _preview(
    request: Request,
    parsed: ParsedFilter,
    ids: list[int] | None,
    *,
    error: str | None = None,
    reason: str = "",
    status: int = 200,
    version: str | None = None,
) -> Response:
    if parsed.event_filter is None:
        return render(request, "replay.html", {"filter": parsed}, status=400)
    if ids is None and parsed.is_empty():
        parsed.errors["filter"] = (
            "choose at least one filter: an empty one would replay every stored event"
        )
        return render(request, "replay.html", {"filter": parsed}, status=400)
    result = await console_of(request).pool.run(_api.replay_preview, parsed, ids, SAMPLE, version)
    return render(
        request,
        "replay_preview.html",
        {
            "filter": parsed,
            "result": result,
            "hidden": _hidden(parsed, ids),
            "error": error,
            "reason": reason,
            "required": version,
            "rehearse_max": REHEARSE_MAX,
        },
        status=status,
    )


@signed_in(operator=True)
async def replay_preview(request: Request) -> Response:
    form = await checked_form(request)
    return await _preview(request, parse_filter(form), _ids(form))


@signed_in(operator=True)
async def replay_start(request: Request) -> Response:
    form = await checked_form(request)
    parsed = parse_filter(form)
    ids = _ids(form)
    reason = form.get("reason", "").strip()
    version = _version(form)
    if parsed.event_filter is None or (ids is None and parsed.is_empty()):
        return await _preview(request, parsed, ids, status=400)
    if not reason:
        return await _preview(
            request,
            parsed,
            ids,
            error="A replay needs a reason (it is recorded in the audit).",
            status=400,
            version=version,
        )
    console = console_of(request)
    check = await console.pool.run(_api.replay_preview, parsed, ids, 1, version)
    gone = _not_running(version, check)
    if gone:
        return await _preview(request, parsed, ids, error=gone, reason=reason, status=409)
    if check.already_processed and form.get("include_processed") != "1":
        return await _preview(
            request,
            parsed,
            ids,
            reason=reason,
            version=version,
            error=(
                f"{check.already_processed} of the selected events were already processed:"
                " replaying runs their handlers' effects again. Tick “include processed"
                " events” to confirm."
            ),
            status=400,
        )
    try:
        result = await console.pool.run(
            _api.replay_start, parsed, ids, reason, principal_of(request).name, version
        )
    except RefusedError as exc:
        return await _preview(request, parsed, ids, error=str(exc), reason=reason, status=400)
    if result.replay_id is None:
        return await _preview(
            request,
            parsed,
            ids,
            error="Nothing to replay: the filter selects no event.",
            reason=reason,
            status=409,
        )
    return RedirectResponse(url_for(request, f"/replay/runs/{result.replay_id}"), 303)


def _run_id(request: Request) -> int:
    raw = request.path_params["run_id"]
    if not raw.isdigit() or len(raw) > 18:
        raise HTTPException(404, f"no replay run {raw!r}")
    return int(raw)


@signed_in()
async def replay_run(request: Request) -> Response:
    pool = console_of(request).pool
    progress = await pool.run(_api.replay_progress, _run_id(request))
    # A run that requires a version waits for a worker of it: say so while none runs.
    required = progress.run.required_version
    waiting_for = None
    if required is not None and not progress.finished:
        running = await pool.run(_api.running_workers)
        waiting_for = None if any(w.version == required for w in running) else required
    return render(
        request,
        "replay_run.html",
        {
            "p": progress,
            "waiting_for": waiting_for,
            "live_refresh": False if progress.finished else RUN_REFRESH_SECONDS,
        },
    )


@signed_in()
async def audit(request: Request) -> Response:
    cursor = request.query_params.get("cursor") or None
    try:
        page = await console_of(request).pool.run(_api.audit, cursor)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    rows: list[dict[str, Any]] = [
        {
            "entry": e,
            "link": url_for(request, f"/replay/runs/{e.id}") if e.kind != "prune" else None,
        }
        for e in page.entries
    ]
    next_page = url_for(request, "/audit", cursor=page.next_cursor) if page.next_cursor else None
    return render(request, "audit.html", {"rows": rows, "next_page": next_page})
