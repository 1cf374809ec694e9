"""The console next to the receiver: ``[console] enabled`` in ``inbox serve``, and
``inbox dev``, which turns it on with a fresh key and one-time sign-in links."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import Mount

from inbox._core.config.settings import Settings
from inbox.console._app import build_app
from inbox.console._links import NEW_LINK_COMMAND, DevToken
from inbox.console._web import Console

__all__ = ["mount_for_dev", "with_console"]


def with_console(
    receiver: Starlette,
    settings: Settings,
    dsn: str,
    *,
    secret_key: str | None = None,
    dev_token: DevToken | None = None,
) -> Starlette:
    """``receiver`` with the console mounted at ``[console] base_path`` (``/console``).

    The result runs the receiver's lifespan and closes the console's pool after it.
    """
    console = build_app(settings, dsn=dsn, secret_key=secret_key, dev_token=dev_token)
    state = console.state.console
    assert isinstance(state, Console)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with receiver.router.lifespan_context(receiver):
            try:
                yield
            finally:
                await state.pool.close()

    app = Starlette(
        routes=[Mount(settings.console.base_path, app=console), Mount("", app=receiver)],
        lifespan=lifespan,
    )
    app.state.receiver = getattr(receiver.state, "receiver", None)
    app.state.console = state
    return app


def mount_for_dev(
    settings: Settings,
    dsn: str,
    receiver: Starlette,
    *,
    data_dir: Path | None = None,
    new_link_command: str = NEW_LINK_COMMAND,
) -> tuple[Starlette, str]:
    """For ``inbox dev``: the receiver with the console, signed with a fresh key, and the
    path of its one-time sign-in link (print it with the host and port in front).

    The console also accepts the links ``inbox console link`` mints into ``data_dir``
    (default ``[database] data_dir``) while it runs; a used or unknown link's page says to
    run ``new_link_command`` in this process's folder for a new one.
    """
    token = DevToken(
        data_dir=settings.database.data_dir if data_dir is None else data_dir,
        command=new_link_command,
        folder=Path.cwd(),
    )
    app = with_console(
        receiver, settings, dsn, secret_key=secrets.token_urlsafe(32), dev_token=token
    )
    return app, f"{settings.console.base_path}/login/token/{token.value}"
