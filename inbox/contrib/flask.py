"""A Flask blueprint that receives webhooks, thin over the shared core.

    from inbox import load_settings
    from inbox.contrib.flask import create_blueprint

    app.register_blueprint(create_blueprint(load_settings()), url_prefix="/inbox")
    # POST /inbox/webhooks/<source>; GET too for a scheme with a GET handshake (Meta's)

The body is streamed from ``request.stream`` against the source's limit, never buffered
whole before the check.
"""

from __future__ import annotations

from flask import Blueprint, Response, request
from werkzeug.exceptions import MethodNotAllowed

from inbox._core.config.settings import Settings
from inbox._receiving.delivery import normalise_headers
from inbox._receiving.receive import receive
from inbox._receiving.receiver import Receiver
from inbox._writing.writer import InboxWriter
from inbox.contrib._shared import SyncWriterSlot, receiver_for

__all__ = ["create_blueprint"]


def create_blueprint(
    settings: Settings,
    *,
    writer: InboxWriter | None = None,
    receiver: Receiver | None = None,
    name: str = "inbox",
) -> Blueprint:
    """A blueprint with ``POST /webhooks/<source>`` (and ``GET`` for a GET handshake);
    ``writer`` as in ``webhook_view``."""
    rules = receiver_for(settings, receiver)
    slot = SyncWriterSlot(writer, settings)
    blueprint = Blueprint(name, __name__)

    @blueprint.post("/webhooks/<source>")
    def webhook(source: str) -> Response:
        reply = receive(
            rules,
            slot.get(),
            source,
            method=request.method,
            url=request.url,
            headers=normalise_headers(request.headers.items()),
            read=request.stream.read,
        )
        return Response(
            reply.body,
            status=reply.status,
            content_type=reply.content_type,
            headers=dict(reply.headers),
        )

    @blueprint.get("/webhooks/<source>")
    def subscribe(source: str) -> Response:
        reply = rules.challenge(
            source, url=request.url, headers=normalise_headers(request.headers.items())
        )
        if reply is None:
            raise MethodNotAllowed(valid_methods=["POST"])  # as before GET was routed
        return Response(
            reply.body,
            status=reply.status,
            content_type=reply.content_type,
            headers=dict(reply.headers),
        )

    return blueprint
