"""The standalone HTTP receiver: a Starlette app, also mountable in Starlette/FastAPI/Litestar.

``POST /webhooks/{source}``, ``GET /healthz``, ``GET /metrics``. The endpoint only adapts
Starlette's request and response to ``inbox._receiving.receive.receive_async``; the rules live in
``inbox._receiving.receiver``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from inbox._core.errors import ConfigError, InboxError
from inbox._core.logs import get_logger
from inbox._core.outage import Outage
from inbox._core.settings import Settings
from inbox._receiving.receive import receive_async, receiver_writer_kwargs
from inbox._receiving.receiver import Receiver, ReceiverResponse, normalise_headers
from inbox._writing.writer_async import AsyncInboxWriter

__all__ = ["create_app"]

log = get_logger("inbox.receiver")


class _WriterSlot:
    """The app's writer: the caller's, or one it makes on first use and closes at shutdown.

    Made on first use, not in the constructor: an async pool belongs to the event loop that
    opens it, and a mounted sub-app never sees a lifespan event.
    """

    def __init__(self, writer: AsyncInboxWriter | None, dsn: str | None, settings: Settings):
        self._writer = writer
        self._owned: AsyncInboxWriter | None = None
        self._dsn = dsn
        self._settings = settings

    def get(self) -> AsyncInboxWriter:
        if self._writer is None:
            self._owned = self._writer = AsyncInboxWriter(
                self._dsn, **receiver_writer_kwargs(self._settings)
            )
        return self._writer

    async def close(self) -> None:
        owned, self._owned = self._owned, None
        if owned is not None:
            self._writer = None
            await owned.close()


def create_app(
    settings: Settings,
    *,
    writer: AsyncInboxWriter | None = None,
    dsn: str | None = None,
    receiver: Receiver | None = None,
) -> Starlette:
    """Build the receiver app for ``settings.sources``.

    It writes with ``writer`` when given (the caller opens and closes it), else with a writer
    of its own on ``dsn`` (default: ``settings.database.url``), closed at shutdown.
    ``receiver`` shares rules and metrics with other adapters; by default one is built.
    Raises ``ConfigError`` for an invalid source or when no database is named.
    """
    if writer is None:
        dsn = dsn or settings.database.url
        if not dsn:
            raise ConfigError(
                "the receiver needs a database: set [database] url (INBOX_DATABASE_URL), "
                "pass dsn= or writer=, or run `inbox serve`, which starts the embedded one"
            )
    rules = receiver if receiver is not None else Receiver(settings)
    slot = _WriterSlot(writer, dsn, settings)

    async def webhook(request: Request) -> Response:
        headers = normalise_headers(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw
        )
        try:
            reply = await receive_async(
                rules,
                slot.get(),
                request.path_params["source"],
                method=request.method,
                url=str(request.url),
                headers=headers,
                chunks=request.stream(),
            )
        except ClientDisconnect:
            # Nobody is left to answer; nothing was stored.
            log.info("client_disconnected", source=request.path_params["source"])
            return Response(status_code=400)
        return _to_starlette(reply)

    # Probes come every few seconds: a failing check is logged once per interval.
    unhealthy = Outage()

    async def healthz(request: Request) -> Response:
        try:
            with anyio.fail_after(rules.write_timeout_seconds):
                await slot.get().ping()
        except TimeoutError:
            return JSONResponse({"status": "unavailable", "detail": "timeout"}, status_code=503)
        except InboxError as exc:
            if unhealthy.failed(time.monotonic()):
                log.warning("health_check_failed", error=str(exc))
            return JSONResponse(
                {"status": "unavailable", "detail": type(exc).__name__}, status_code=503
            )
        unhealthy.recovered(time.monotonic())
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        body, content_type = rules.metrics.render()
        return Response(body, media_type=content_type)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await slot.close()
            log.info("receiver_stopped")

    app = Starlette(
        routes=[
            Route("/webhooks/{source}", webhook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.receiver = rules
    return app


def _to_starlette(reply: ReceiverResponse) -> Response:
    return Response(
        reply.body,
        status_code=reply.status,
        headers=dict(reply.headers),
        media_type=reply.content_type,
    )
