"""A trivial page, served the way the console is, to prove the browser harness on its own."""

from __future__ import annotations

import html
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>harness</title></head>
<body><h1 id="greeting">Hello from a real server</h1>
<form id="echo" method="post" action="/echo">
<input name="text"><button type="submit">Send</button></form>
</body></html>"""


async def _page(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE)


async def _echo(request: Request) -> HTMLResponse:
    # Parsed by hand: Starlette's request.form() needs python-multipart, not a dependency here.
    text = parse_qs((await request.body()).decode()).get("text", [""])[0]
    return HTMLResponse(f'<!doctype html><p id="echoed">{html.escape(text)}</p>')


def create_app() -> Starlette:
    return Starlette(routes=[Route("/", _page), Route("/echo", _echo, methods=["POST"])])
