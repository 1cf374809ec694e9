"""The standalone HTTP receiver: a Starlette app, also mountable in Starlette/FastAPI/Litestar.

``POST /webhooks/{source}`` (and ``GET``, for a scheme with a GET handshake: Meta's
``hub.challenge``), ``GET /healthz``, ``GET /livez``, ``GET /readyz`` (see
``inbox.contrib._probes``), ``GET /metrics``. The endpoint only adapts
the ASGI request and reply to ``inbox._receiving.receive.receive_async``; the rules live in
``inbox._receiving.receiver``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from inbox._core.config.settings import Settings
from inbox._core.database.outage import Outage
from inbox._core.errors import ConfigError, InboxError
from inbox._core.logs import get_logger
from inbox._receiving.delivery import normalise_headers
from inbox._receiving.receive import receive_async, receiver_writer_kwargs
from inbox._receiving.receiver import Receiver
from inbox._writing.writer_async import AsyncInboxWriter
from inbox.contrib._probes import ReceiverProbes

__all__ = ["create_app"]

log = get_logger("inbox.receiver")

# URLs a receiver remembers (``_WebhookEndpoint._url``).
_REMEMBERED_URLS = 256


class _WriterSlot:
    """The app's writer: the caller's, or one it makes on first use and closes at shutdown.

    Made on first use, not in the constructor: an async pool belongs to the event loop that
    opens it, and a mounted sub-app never sees a lifespan event. So that a writer of its
    own is closed even then, a task waits with it until the app's shutdown or the event
    loop's: an open pool's worker that is cancelled while it connects (the database slow or
    down) goes on waiting for work, and the loop's shutdown then waits for it forever.
    """

    def __init__(self, writer: AsyncInboxWriter | None, dsn: str | None, settings: Settings):
        self._writer = writer
        self._owned: AsyncInboxWriter | None = None
        self._dsn = dsn
        self._settings = settings
        self._closer: asyncio.Task[None] | None = None

    def get(self) -> AsyncInboxWriter:
        if self._writer is None:
            # One group statement in flight: this app verifies every request on the loop
            # that writes, and fewer, larger groups leave it more CPU (see AsyncInboxWriter).
            self._owned = self._writer = AsyncInboxWriter(
                self._dsn, groups_in_flight=1, **receiver_writer_kwargs(self._settings)
            )
            self._closer = asyncio.get_running_loop().create_task(
                self._close_when_cancelled(), name="pg-inbox receiver writer closer"
            )
        return self._writer

    async def _close_when_cancelled(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()

    async def close(self) -> None:
        closer, self._closer = self._closer, None
        if closer is not None and closer is not asyncio.current_task():
            closer.cancel()
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

    webhook = _WebhookEndpoint(rules, slot)

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

    async def ping() -> None:
        await slot.get().ping()

    probes = ReceiverProbes(ping, rules.write_timeout_seconds)

    async def livez(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if not probes.connected:
            probes.start()  # mounted where no lifespan runs: the first probe warms up
            return JSONResponse(
                {"status": "starting", "detail": "the pool has not connected yet"},
                status_code=503,
            )
        return await healthz(request)

    async def subscribe(request: Request) -> Response:
        # A GET handshake is rare and unsigned: the ordinary Request will do.
        reply = rules.challenge(
            request.path_params["source"],
            url=str(request.url),
            headers=normalise_headers(request.headers.items()),
        )
        if reply is None:
            # What the router says for a method the route lacks: as before GET was routed.
            raise HTTPException(405, headers={"Allow": "POST"})
        return Response(
            reply.body,
            status_code=reply.status,
            media_type=reply.content_type,
            headers=dict(reply.headers),
        )

    async def metrics(request: Request) -> Response:
        body, content_type = rules.metrics.render()
        return Response(body, media_type=content_type)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The pool connects now, not on the first webhook: ready means connected.
        probes.start(beat=True)
        try:
            yield
        finally:
            await probes.stop()
            await slot.close()
            log.info("receiver_stopped")

    app = _ReceiverApp(
        webhook,
        routes=[
            Route("/webhooks/{source}", webhook, methods=["POST"]),
            Route("/webhooks/{source}", subscribe, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/livez", livez, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.receiver = rules
    app.state.probes = probes
    return app


class _ReceiverApp(Starlette):
    """The receiver's Starlette app, with a short way to its one busy route.

    A ``POST /webhooks/{source}`` goes straight to the endpoint rather than through
    Starlette's middleware stack and router (their matching and wrapping were ~5 % of
    `inbox serve`'s CPU a webhook). The route is matched as the router would: on the path
    below the app's mount point, one non-empty segment. Everything else, and every request
    once the host has added middleware of its own, takes the ordinary way.
    """

    def __init__(self, webhook: _WebhookEndpoint, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._webhook = webhook

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not self.user_middleware:
            source = _webhook_source(scope)
            if source is not None:
                scope["app"] = self
                scope["path_params"] = {"source": source}
                await self._webhook(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


_WEBHOOKS_PREFIX = "/webhooks/"


def _webhook_source(scope: Scope) -> str | None:
    """The ``{source}`` of a path ``/webhooks/{source}`` below the mount point, else None."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    # The path below the mount point, as Starlette's router takes it (a server behind a
    # proxy may leave root_path out of path: then the path is taken whole).
    if root_path and path.startswith(root_path):
        if path == root_path:
            return None
        if path[len(root_path)] == "/":
            path = path[len(root_path) :]
    if not path.startswith(_WEBHOOKS_PREFIX):
        return None
    source = path[len(_WEBHOOKS_PREFIX) :]
    return source if source and "/" not in source else None


class _WebhookEndpoint:
    """``POST /webhooks/{source}`` as a plain ASGI endpoint (Starlette still routes to it).

    It reads the scope and sends the reply itself instead of building a ``Request`` and a
    ``Response`` and passing through their wrappers, a share of the CPU per webhook on the
    hot path of `inbox serve` (benchmarks/ANALYSIS.md, "Ingest through HTTP"). The reply's
    headers are the ones a ``Response`` would send.
    """

    def __init__(self, rules: Receiver, slot: _WriterSlot) -> None:
        self._rules = rules
        self._slot = slot
        self._urls: dict[tuple[Any, ...], str] = {}

    def _url(self, scope: Scope, headers: Mapping[str, str]) -> str:
        """The request's URL as Starlette builds it (some providers sign it), remembered:
        a provider posts to the same few URLs, and building one was ~2 % of the CPU a
        webhook. The key holds everything ``URL(scope=...)`` reads."""
        server = scope.get("server")
        key = (
            scope.get("scheme"),
            None if server is None else tuple(server),  # a list, from some servers
            scope["path"],
            scope.get("query_string"),
            headers.get("host"),
        )
        url = self._urls.get(key)
        if url is None:
            if len(self._urls) >= _REMEMBERED_URLS:
                self._urls.clear()  # query strings that vary; start over rather than grow
            url = self._urls[key] = str(URL(scope=scope))
        return url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        source = scope["path_params"]["source"]
        headers = normalise_headers(
            (name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]
        )
        try:
            reply = await receive_async(
                self._rules,
                self._slot.get(),
                source,
                method=scope["method"],
                url=self._url(scope, headers),
                headers=headers,
                chunks=_body(receive),
            )
        except ClientDisconnect:
            # Nobody is left to answer; nothing was stored.
            log.info("client_disconnected", source=source)
            await _send_reply(send, 400, b"", None, {})
            return
        await _send_reply(send, reply.status, reply.body, reply.content_type, reply.headers)


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    """The request body's chunks as they arrive; ``ClientDisconnect`` if the client left."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if chunk := message.get("body", b""):
            yield chunk
        if not message.get("more_body", False):
            return


async def _send_reply(
    send: Send, status: int, body: bytes, content_type: str | None, headers: Mapping[str, str]
) -> None:
    raw = [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
    ]
    raw.append((b"content-length", str(len(body)).encode("latin-1")))
    if content_type is not None:
        if content_type.startswith("text/") and "charset=" not in content_type.lower():
            content_type += "; charset=utf-8"  # as Starlette's Response says it
        raw.append((b"content-type", content_type.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
