"""Sign-in, sign-out and the one-time link of ``inbox dev``."""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inbox._core.errors import DatabaseUnavailableError
from inbox._core.logs import get_logger
from inbox.console._auth import (
    Principal,
    authenticate,
    current_principal,
    end_session,
    start_session,
)
from inbox.console._limits import SignInLimited
from inbox.console._render import render, url_for
from inbox.console._web import checked_form, console_of, error_page

__all__ = ["login_form", "login_submit", "login_token", "logout"]

log = get_logger("inbox.console")


def _next(request: Request, value: str | None) -> str:
    """Where to go after signing in: a path of the console only (never another site)."""
    # Browsers drop tabs and newlines from URLs and read "\\" as "/": "/\t/evil.example"
    # would become "//evil.example", another site. Only plain printable paths pass.
    plain = value is not None and all(" " < c < "\x7f" and c != "\\" for c in value)
    if value and plain and value.startswith("/") and not value.startswith("//"):
        return url_for(request, "") + value
    return url_for(request, "/")


def _form(
    request: Request, *, error: str | None = None, status: int = 200, name: str = ""
) -> Response:
    return render(
        request,
        "login.html",
        {
            "error": error,
            "username": name,
            "next": request.query_params.get("next", ""),
            "has_users": console_of(request).has_users,
        },
        status=status,
    )


async def login_form(request: Request) -> Response:
    console = console_of(request)
    try:
        principal = await current_principal(console.settings.console, console.pool, request)
    except DatabaseUnavailableError:
        principal = None  # the form still shows; signing in waits for the database
    if principal is not None:
        return RedirectResponse(_next(request, request.query_params.get("next")), 303)
    return _form(request)


async def login_submit(request: Request) -> Response:
    form = await checked_form(request)
    console = console_of(request)
    name = str(form.get("username") or "").strip()
    password = str(form.get("password") or "")
    peer = request.client.host if request.client else ""
    try:
        attempt = await console.limiter.begin(name, peer)
    except SignInLimited as limited:
        log.warning(
            "console_sign_in_limited", user=name, peer=peer, per_address=limited.per_address
        )
        seconds = max(1, round(limited.wait))
        page = _form(
            request, error=f"Too many attempts, try again in {seconds} s.", status=429, name=name
        )
        page.headers["retry-after"] = str(seconds)
        return page
    principal = await anyio.to_thread.run_sync(
        authenticate, console.settings.console, name, password
    )
    if principal is None:
        log.info("console_sign_in_failed", user=name, peer=peer)
        return _form(request, error="Wrong user name or password.", status=401, name=name)
    await console.limiter.succeeded(attempt)
    await start_session(console.settings.console, console.pool, request, principal)
    log.info("console_signed_in", user=principal.name, role=principal.role)
    return RedirectResponse(_next(request, str(form.get("next") or "")), 303)


async def logout(request: Request) -> Response:
    await checked_form(request)
    await end_session(console_of(request).pool, request)
    return RedirectResponse(url_for(request, "/login"), 303)


async def login_token(request: Request) -> Response:
    token = console_of(request).dev_token
    offered = request.path_params["token"]
    if token is None:
        return error_page(request, 403, "This sign-in link is wrong or was already used.")
    if not await anyio.to_thread.run_sync(token.redeem, offered):
        log.info("console_dev_link_refused")
        return error_page(
            request,
            403,
            "This sign-in link is wrong, expired, or was already used: each link works once.",
            new_link={"command": token.command, "folder": token.folder},
        )
    console = console_of(request)
    dev = Principal("dev", "operator", "dev")
    await start_session(console.settings.console, console.pool, request, dev)
    log.info("console_signed_in", user="dev", role="operator", via="dev")
    return RedirectResponse(url_for(request, "/"), 303)
