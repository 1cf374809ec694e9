"""A Django view that receives webhooks, thin over the shared core.

    # urls.py
    from inbox import load_settings
    from inbox.contrib.django import webhook_view

    urlpatterns = [path("webhooks/<str:source>", webhook_view(load_settings()))]

The view is CSRF-exempt (a provider has no CSRF token; the signature is the check), accepts
only POST, streams the body against the source's limit (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``
does not apply: the view never touches ``request.body``) and needs no Django database.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from inbox._core.config.settings import Settings
from inbox._receiving.delivery import normalise_headers
from inbox._receiving.receive import receive
from inbox._receiving.receiver import Receiver
from inbox._writing.writer import InboxWriter
from inbox.contrib._shared import SyncWriterSlot, receiver_for

__all__ = ["webhook_view"]


def webhook_view(
    settings: Settings,
    *,
    writer: InboxWriter | None = None,
    receiver: Receiver | None = None,
) -> Callable[[HttpRequest, str], HttpResponse]:
    """A view for a URL pattern with a ``source`` argument: ``path("<str:source>", view)``.

    Writes with ``writer`` when given, else with one on ``settings.database.url``.
    """
    rules = receiver_for(settings, receiver)
    slot = SyncWriterSlot(writer, settings)

    def view(request: HttpRequest, source: str) -> HttpResponse:
        reply = receive(
            rules,
            slot.get(),
            source,
            method=request.method or "POST",
            url=request.build_absolute_uri(),
            headers=normalise_headers(request.headers.items()),
            read=request.read,
        )
        response = HttpResponse(reply.body, status=reply.status, content_type=reply.content_type)
        for name, value in reply.headers.items():
            response[name] = value
        return response

    # Applied as calls: Django ships no type information, and as decorators they would
    # make the typed view untyped.
    exempt: Callable[[HttpRequest, str], HttpResponse] = csrf_exempt(require_POST(view))
    return exempt
