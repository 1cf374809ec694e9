"""Each adapter, run by its real framework's test client against a real PostgreSQL.

They all call the same core, so a handful of cases per adapter shows the wiring: accepted,
duplicate, 401, 404, 413 while streaming, Alipay's reply, the headers stored, and Meta's GET
subscription (answered, refused, and a 405 for every other source, as before).
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from inbox import AsyncInboxWriter, InboxWriter, Settings, create_app
from tests.receiver.conftest import (
    META_SOURCE,
    META_TOKEN,
    META_TOKEN_ENV,
    count_events,
    event_rows,
    signed,
)

Make = Callable[..., Settings]


# -- Django ---------------------------------------------------------------------------------

urlpatterns: list[Any] = []  # this module is the test URLconf; each test fills it


SUBSCRIBE = "webhooks/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="


@pytest.fixture
def django_client(
    make_settings: Make, receiver_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    import django
    from django.conf import settings as django_settings
    from django.test import Client
    from django.urls import clear_url_caches, path

    from inbox.contrib.django import webhook_view

    if not django_settings.configured:
        # The least Django needs to route a request: no database, no apps, no middleware.
        django_settings.configure(
            ROOT_URLCONF=__name__, ALLOWED_HOSTS=["testserver"], MIDDLEWARE=[], SECRET_KEY="t"
        )
        django.setup()
    monkeypatch.setenv(META_TOKEN_ENV, META_TOKEN)
    with InboxWriter(receiver_url) as writer:
        view = webhook_view(make_settings(receiver_url, sources=[META_SOURCE]), writer=writer)
        urlpatterns[:] = [path("hooks/<str:source>", view)]
        clear_url_caches()
        yield Client()
    urlpatterns.clear()
    clear_url_caches()


def test_django_view_stores_and_acknowledges(
    django_client: Any, make_settings: Make, db_url: str, receiver_url: str
) -> None:
    settings = make_settings(receiver_url)
    request = signed(settings, "sw", url="http://testserver/hooks/{source}")
    extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in request.headers.items()}
    extra["HTTP_COOKIE"] = "session=secret"

    def send() -> Any:
        return django_client.generic(
            "POST", "/hooks/sw", request.body, content_type="application/json", **extra
        )

    first, again = send(), send()
    assert first.status_code == 200
    assert first.json()["status"] == "accepted"
    assert again.json() == {"status": "duplicate", "event_id": first.json()["event_id"]}
    [row] = event_rows(db_url)
    assert row[2] == request.headers["webhook-id"]
    assert "cookie" not in row[5]
    assert row[5]["webhook-id"] == request.headers["webhook-id"]


def test_django_view_refuses_bad_input(django_client: Any, db_url: str) -> None:
    assert (
        django_client.post("/hooks/sw", b"{}", content_type="application/json").status_code == 401
    )
    assert (
        django_client.post("/hooks/nope", b"{}", content_type="application/json").status_code == 404
    )
    big = django_client.post("/hooks/small", b"x" * 100, content_type="application/json")
    assert big.status_code == 413
    assert django_client.get("/hooks/sw").status_code == 405
    assert count_events(db_url) == 0


def test_django_view_answers_metas_subscription(django_client: Any, db_url: str) -> None:
    path = "/hooks/" + SUBSCRIBE.removeprefix("webhooks/")
    answered = django_client.get(path + META_TOKEN)
    assert (answered.status_code, answered.content) == (200, b"1158201444")
    assert answered["content-type"].startswith("text/plain")
    assert django_client.get(path + "guess").status_code == 403
    for refused in (django_client.get("/hooks/sw"), django_client.put(path + META_TOKEN)):
        assert (refused.status_code, refused["allow"]) == (405, "POST")
    assert count_events(db_url) == 0


def test_django_view_answers_alipay_with_success(
    django_client: Any, make_settings: Make, db_url: str, receiver_url: str
) -> None:
    request = signed(make_settings(receiver_url), "alipay")
    response = django_client.generic(
        "POST", "/hooks/alipay", request.body, content_type=request.headers["content-type"]
    )
    assert (response.status_code, response.content) == (200, b"success")
    assert count_events(db_url) == 1


# -- Flask ----------------------------------------------------------------------------------


@pytest.fixture
def flask_client(
    make_settings: Make, receiver_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    from flask import Flask

    from inbox.contrib.flask import create_blueprint

    monkeypatch.setenv(META_TOKEN_ENV, META_TOKEN)
    app = Flask(__name__)
    with InboxWriter(receiver_url) as writer:
        settings = make_settings(receiver_url, sources=[META_SOURCE])
        app.register_blueprint(create_blueprint(settings, writer=writer), url_prefix="/inbox")
        yield app.test_client()


def test_flask_blueprint_stores_and_acknowledges(
    flask_client: Any, make_settings: Make, db_url: str, receiver_url: str
) -> None:
    request = signed(
        make_settings(receiver_url), "github", url="http://localhost/inbox/webhooks/{source}"
    )
    response = flask_client.post(
        "/inbox/webhooks/github", data=request.body, headers=request.headers
    )
    assert response.status_code == 200
    assert response.json["status"] == "accepted"
    [row] = event_rows(db_url)
    assert (row[1], row[2], row[3]) == ("github", request.headers["x-github-delivery"], "ping")


def test_flask_blueprint_refuses_bad_input(flask_client: Any, db_url: str) -> None:
    assert flask_client.post("/inbox/webhooks/github", data=b"{}").status_code == 401
    assert flask_client.post("/inbox/webhooks/nope", data=b"{}").status_code == 404

    class CountingStream(io.BytesIO):
        bytes_read = 0

        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(min(size or 16, 16) if size and size > 0 else 16)
            self.bytes_read += len(chunk)
            return chunk

    # a chunked body with no Content-Length: the limit is enforced while streaming
    stream = CountingStream(b"x" * 10_000)
    response = flask_client.post(
        "/inbox/webhooks/small",
        input_stream=stream,
        environ_base={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413
    assert stream.bytes_read < 200  # the limit is 64: the rest was never read
    assert count_events(db_url) == 0


def test_flask_blueprint_answers_metas_subscription(flask_client: Any, db_url: str) -> None:
    answered = flask_client.get("/inbox/" + SUBSCRIBE + META_TOKEN)
    assert (answered.status_code, answered.data) == (200, b"1158201444")
    assert answered.content_type.startswith("text/plain")
    assert flask_client.get("/inbox/" + SUBSCRIBE + "guess").status_code == 403
    refused = flask_client.get("/inbox/webhooks/github")
    assert (refused.status_code, refused.headers["allow"]) == (405, "POST")
    assert flask_client.put("/inbox/" + SUBSCRIBE).status_code == 405  # Flask's router's
    assert count_events(db_url) == 0


def test_flask_and_django_views_need_a_database(make_settings: Make) -> None:
    from inbox import ConfigError
    from inbox.contrib.flask import create_blueprint

    with pytest.raises(ConfigError, match="needs a database"):
        create_blueprint(make_settings(None))


# -- ASGI: mounted in a host app, and streamed through httpx ---------------------------------


def test_the_asgi_app_mounts_under_a_host_app(
    make_settings: Make, db_url: str, receiver_url: str
) -> None:
    settings = make_settings(receiver_url)
    host = Starlette(routes=[Mount("/inbox", app=create_app(settings))])
    with TestClient(host) as client:
        request = signed(settings, "sw")
        response = client.post("/inbox/webhooks/sw", content=request.body, headers=request.headers)
        assert response.status_code == 200
        assert client.get("/inbox/healthz").json() == {"status": "ok"}
    assert count_events(db_url) == 1


def test_a_mounted_app_closes_its_writer_when_the_host_stops_during_an_outage(
    make_settings: Make,
) -> None:
    """A mounted app never sees a lifespan event. With the database silent, the host stops
    while the writer's pool is connecting: its event loop must still end, not wait for the
    pool forever."""
    connecting = threading.Event()
    clients: list[socket.socket] = []

    def accept(silent: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while True:
                clients.append(silent.accept()[0])  # kept open, never answered
                connecting.set()

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        threading.Thread(target=accept, args=(silent,), daemon=True).start()
        port = silent.getsockname()[1]
        settings = make_settings(f"postgresql://postgres@127.0.0.1:{port}/postgres")
        host = Starlette(routes=[Mount("/inbox", app=create_app(settings))])
        answers: list[int] = []

        def use_and_stop() -> None:
            with TestClient(host) as client:
                request = signed(settings, "sw")
                reply = client.post(
                    "/inbox/webhooks/sw", content=request.body, headers=request.headers
                )
                answers.append(reply.status_code)
                connecting.clear()
                assert connecting.wait(timeout=30), "the pool stopped trying to connect"

        stopping = threading.Thread(target=use_and_stop, daemon=True)
        stopping.start()
        stopping.join(timeout=60)
        assert not stopping.is_alive(), "the host's event loop never ended"
    for client in clients:
        client.close()
    assert answers == [503]


def test_the_asgi_app_mounts_in_fastapi(
    make_settings: Make, db_url: str, receiver_url: str
) -> None:
    from fastapi import FastAPI

    settings = make_settings(receiver_url)
    host = FastAPI()
    host.mount("/hooks", create_app(settings))
    with TestClient(host) as client:
        request = signed(settings, "sw")
        response = client.post("/hooks/webhooks/sw", content=request.body, headers=request.headers)
        assert response.status_code == 200
        assert response.json()["status"] == "accepted"
        unsigned = client.post("/hooks/webhooks/sw", content=b"{}")
        assert unsigned.status_code == 401
    assert count_events(db_url) == 1


@pytest.mark.anyio
async def test_an_oversize_stream_is_refused_without_reading_the_rest(
    make_settings: Make, db_url: str, receiver_url: str
) -> None:
    settings = make_settings(receiver_url)
    sent = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(1000):
            sent += 1
            yield b"x" * 16

    async with AsyncInboxWriter(receiver_url) as writer:
        app = create_app(settings, writer=writer)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.post("/webhooks/small", content=body())
            ok = signed(settings, "sw", url="http://t/webhooks/{source}")
            accepted = await client.post("/webhooks/sw", content=ok.body, headers=ok.headers)
    assert response.status_code == 413
    assert sent < 10  # 64 bytes allowed: the fifth chunk of 16 ends the read
    assert accepted.status_code == 200  # the writer it was given works
    assert count_events(db_url) == 1


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
