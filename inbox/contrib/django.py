"""A Django view that receives webhooks, thin over the shared core.

    # urls.py
    from inbox import load_settings
    from inbox.contrib.django import webhook_view

    urlpatterns = [path("webhooks/<str:source>", webhook_view(load_settings()))]

The view is CSRF-exempt (a provider has no CSRF token; the signature is the check), accepts
only POST (and GET for a scheme with a GET handshake: Meta's ``hub.challenge``), streams the
body against the source's limit (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` does not apply: the
view never touches ``request.body``) and needs no Django database.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt

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
        headers = normalise_headers(request.headers.items())
        url = request.build_absolute_uri()
        if request.method == "POST":
            reply = receive(
                rules,
                slot.get(),
                source,
                method="POST",
                url=url,
                headers=headers,
                read=request.read,
            )
        else:
            # A GET only for a scheme with a GET handshake; anything else is the 405 that
            # require_POST answered.
            answered = None
            if request.method == "GET":
                answered = rules.challenge(source, url=url, headers=headers)
            if answered is None:
                return HttpResponseNotAllowed(["POST"])
            reply = answered
        response = HttpResponse(reply.body, status=reply.status, content_type=reply.content_type)
        for name, value in reply.headers.items():
            response[name] = value
        return response

    # Applied as a call: Django ships no type information, and as a decorator it would make
    # the typed view untyped.
    exempt: Callable[[HttpRequest, str], HttpResponse] = csrf_exempt(view)
    return exempt
