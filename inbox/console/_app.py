"""``create_app``: the console as a Starlette app, mountable into any ASGI application."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from inbox._core.config.settings import Settings
from inbox._core.errors import (
    ConfigError,
    DatabaseUnavailableError,
    EventNotFoundError,
    ReplayNotFoundError,
)
from inbox._core.logs import get_logger
from inbox.console import _actions, _login, _pages, _rehearse
from inbox.console._limits import LoginLimiter
from inbox.console._links import DevToken
from inbox.console._pool import ConsolePool
from inbox.console._session import SECURITY_HEADERS, SessionMiddleware
from inbox.console._web import Console, error_page

__all__ = ["build_app", "create_app"]

log = get_logger("inbox.console")

STATIC = Path(__file__).parent / "static"

MISSING_KEY = (
    "the console needs a secret key to sign its session cookies: set [console] secret_key"
    " (or INBOX_CONSOLE__SECRET_KEY, or secret_key_file = PATH); make one with"
    " `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
)


def _routes() -> list[BaseRoute]:
    return [
        Route("/", _pages.overview, methods=["GET"]),
        Route("/login", _login.login_form, methods=["GET"]),
        Route("/login", _login.login_submit, methods=["POST"]),
        Route("/logout", _login.logout, methods=["POST"]),
        Route("/login/token/{token}", _login.login_token, methods=["GET"]),
        Route("/events", _pages.events, methods=["GET"]),
        Route("/events/{event_id}", _pages.event_detail, methods=["GET"]),
        Route("/events/{event_id}/body", _pages.event_body, methods=["GET"]),
        Route("/events/{event_id}/deliveries/{delivery}/body", _pages.event_body, methods=["GET"]),
        Route("/dead", _actions.dead, methods=["GET"]),
        Route("/dead/retry", _actions.dead_retry, methods=["POST"]),
        Route("/replay", _actions.replay_form, methods=["GET"]),
        Route("/replay/preview", _actions.replay_preview, methods=["POST"]),
        Route("/replay", _actions.replay_start, methods=["POST"]),
        Route("/replay/rehearse", _rehearse.rehearse, methods=["POST"]),
        Route("/replay/rehearsals/{request_id}", _rehearse.rehearsal_page, methods=["GET"]),
        Route("/replay/runs/{run_id}", _actions.replay_run, methods=["GET"]),
        Route("/audit", _actions.audit, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    defaults = {404: "There is no such page.", 405: "That page does not take this method."}
    detail = exc.detail
    if exc.status_code in defaults and detail in ("Not Found", "Method Not Allowed"):
        detail = defaults[exc.status_code]
    return error_page(request, exc.status_code, str(detail))


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_page(request, 404, str(exc))


async def _unavailable(request: Request, exc: Exception) -> Response:
    log.warning("console_database_unavailable", error=str(exc))
    return error_page(
        request,
        503,
        "The database is unavailable, so the console cannot show this page. It reconnects"
        " by itself: reload in a moment.",
    )


async def _server_error(request: Request, exc: Exception) -> Response:
    # Starlette calls this from its outermost middleware, outside SessionMiddleware, so the
    # page carries the security headers itself. The exception goes on to the server's log.
    log.error("console_error", path=request.url.path, error=f"{type(exc).__name__}: {exc}")
    page = error_page(request, 500, "Something went wrong on our side; it is in the log.")
    page.headers.update({**SECURITY_HEADERS, "cache-control": "no-store"})
    return page


def create_app(
    settings: Settings,
    *,
    dsn: str | None = None,
    secret_key: str | None = None,
    dev_login_token: str | None = None,
) -> Starlette:
    """The operator console for ``settings`` (its ``[console]`` section), on ``dsn``
    (default ``settings.database.url``).

    Mount it anywhere (``Mount("/console", app=create_app(settings))``); it opens its
    connection pool on first use and closes it at its lifespan's end, or when
    ``await app.state.console.pool.close()`` is called by an app that mounts it.
    ``secret_key`` overrides the settings' (``inbox dev`` passes a fresh one);
    ``dev_login_token`` enables ``GET /login/token/{token}``, valid once.
    """
    dev_token = DevToken(dev_login_token) if dev_login_token else None
    return build_app(settings, dsn=dsn, secret_key=secret_key, dev_token=dev_token)


def build_app(
    settings: Settings,
    *,
    dsn: str | None = None,
    secret_key: str | None = None,
    dev_token: DevToken | None = None,
) -> Starlette:
    """``create_app``, with the one-time links of ``inbox dev`` given whole (its banner's
    and the ones ``inbox console link`` mints)."""
    dsn = dsn or settings.database.url
    if not dsn:
        raise ConfigError(
            "the console needs a database: set [database] url (INBOX_DATABASE__URL) or pass dsn=",
            field="database.url",
        )
    key = secret_key or settings.console.secret_key_value()
    if not key:
        raise ConfigError(MISSING_KEY, field="console.secret_key")
    if len(key) < 16:
        raise ConfigError(
            "console.secret_key is too short: use at least 16 random characters",
            field="console.secret_key",
        )
    pool = ConsolePool(dsn, settings.database)
    console = Console(
        settings=settings,
        pool=pool,
        limiter=LoginLimiter(
            pool,
            settings.console.login_attempts,
            settings.console.login_window_seconds,
            settings.console.login_attempts_per_address,
        ),
        dev_token=dev_token,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await console.pool.close()

    app = Starlette(
        routes=_routes(),
        middleware=[
            Middleware(
                SessionMiddleware,
                secret_key=key,
                idle_seconds=settings.console.session_idle_minutes * 60,
                trusted_proxies=settings.console.trusted_proxies,
            )
        ],
        exception_handlers={
            HTTPException: _http_error,
            EventNotFoundError: _not_found,
            ReplayNotFoundError: _not_found,
            DatabaseUnavailableError: _unavailable,
            Exception: _server_error,
        },
        lifespan=lifespan,
    )
    app.state.console = console
    return app
