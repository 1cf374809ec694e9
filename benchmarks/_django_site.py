"""The Django project benchmarks/receiver_load serves through gunicorn: settings, URLconf and
WSGI application in one module, the webhook view mounted as docs/receiving.md says.

    INBOX_CONFIG=inbox.toml DJANGO_SETTINGS_MODULE=benchmarks._django_site \\
        gunicorn --worker-class gthread --threads 32 benchmarks._django_site:application

A new project's settings (``django-admin startproject``) less what needs a database, which
the view does not: no installed apps, so no sessions, auth or messages middleware.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from inbox import load_settings
from inbox.contrib.django import webhook_view

SECRET_KEY = "pg-inbox benchmark, never a real site"  # noqa: S105 - signs nothing here
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS: list[str] = []
DATABASES: dict[str, Any] = {}
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",  # sets Content-Length, as the driver needs
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = __name__
USE_TZ = True


def healthz(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("inbox/webhooks/<str:source>", webhook_view(load_settings())),
    path("healthz", healthz),
]

# Django imports its settings module while this one is still loading: every setting above
# is defined by then, and the URLconf is read at the first request.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", __name__)
application = get_wsgi_application()
