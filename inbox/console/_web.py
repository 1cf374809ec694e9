"""What every console endpoint shares: the console's state, the sign-in gate, the CSRF
check, and the error pages."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import ImmutableMultiDict
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from inbox._core.config.settings import Settings
from inbox.console._auth import Principal, current_principal
from inbox.console._limits import LoginLimiter
from inbox.console._links import DevToken
from inbox.console._pool import ConsolePool
from inbox.console._render import render, url_for
from inbox.console._session import session_of

__all__ = [
    "Console",
    "Endpoint",
    "checked_form",
    "console_of",
    "error_page",
    "form_values",
    "plain_input",
    "principal_of",
    "signed_in",
]

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass
class Console:
    settings: Settings
    pool: ConsolePool
    limiter: LoginLimiter
    dev_token: DevToken | None

    @property
    def bodies(self) -> str:
        return self.settings.console.bodies

    @property
    def has_users(self) -> bool:
        """Whether anyone can sign in with a password (``inbox dev`` has nobody)."""
        return any(u.password_hash for u in self.settings.console.users)


def console_of(request: Request) -> Console:
    console = request.app.state.console
    assert isinstance(console, Console)
    return console


def principal_of(request: Request) -> Principal:
    principal = request.scope.get("inbox.console.principal")
    assert isinstance(principal, Principal), "the endpoint is not behind signed_in"
    return principal


ERROR_IDS = {
    400: "bad-request",
    403: "forbidden",
    404: "not-found",
    429: "too-many",
    503: "db-unavailable",
}
ERROR_TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    429: "Too many attempts",
    500: "Server error",
    503: "Database unavailable",
}


def error_page(
    request: Request, status: int, message: str, *, new_link: dict[str, Any] | None = None
) -> Response:
    """The error page; ``new_link`` (``command``, ``folder``) says how to get a new
    one-time link of ``inbox dev`` instead of pointing to a sign-in form nobody can use."""
    return render(
        request,
        "error.html",
        {
            "status": status,
            "element_id": ERROR_IDS.get(status, "error"),
            "title": ERROR_TITLES.get(status, "Error"),
            "message": message,
            "new_link": new_link,
            "has_users": console_of(request).has_users,
        },
        status=status,
    )


def plain_input(items: Iterable[tuple[str, str]]) -> None:
    """Refuse (400) a query or form holding a NUL character: PostgreSQL's text cannot hold
    one, so the value could only fail deeper down, as a 500 instead of this page."""
    if any("\x00" in name or "\x00" in value for name, value in items):
        raise HTTPException(400, "the request holds a NUL character, which no field may hold")


def signed_in(*, operator: bool = False) -> Callable[[Endpoint], Endpoint]:
    """Only signed-in users (a page redirects to the sign-in form, a POST is refused);
    with ``operator``, only operators (a viewer gets the 403 page)."""

    def decorate(endpoint: Endpoint) -> Endpoint:
        async def gate(request: Request) -> Response:
            plain_input(request.query_params.multi_items())
            console = console_of(request)
            principal = await current_principal(console.settings.console, console.pool, request)
            if principal is None:
                if request.method == "GET":
                    here = request.url.path[len(request.scope.get("root_path", "")) :]
                    if request.url.query:
                        here += "?" + request.url.query
                    return RedirectResponse(url_for(request, "/login", next=here), 303)
                raise HTTPException(403, "sign in first")
            request.scope["inbox.console.principal"] = principal
            if operator and not principal.is_operator:
                raise HTTPException(403, "this needs the operator role; you are a viewer")
            return await endpoint(request)

        gate.__name__ = endpoint.__name__
        gate.__doc__ = endpoint.__doc__
        return gate

    return decorate


MAX_FORM_BYTES = 256 * 1024


async def checked_form(request: Request) -> ImmutableMultiDict[str, str]:
    """The POSTed form, once its CSRF token matches the session's (else 403).

    Every console form is URL-encoded (no uploads), so it is parsed here rather than with
    another dependency (Starlette's form parser needs python-multipart).
    """
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "the form is too large")
    try:
        form = ImmutableMultiDict(
            parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=10_000)
        )
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "the form could not be read") from None
    plain_input(form.multi_items())
    offered = form.get("csrf")
    expected = session_of(request).csrf
    if not isinstance(offered, str) or not secrets.compare_digest(
        offered.encode(), expected.encode()
    ):
        raise HTTPException(
            403, "the form's security token is missing or stale: reload the page and try again"
        )
    return form


def form_values(form: ImmutableMultiDict[str, str]) -> dict[str, str]:
    return dict(form.items())
