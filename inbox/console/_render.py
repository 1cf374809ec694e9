"""Templates (Jinja2, autoescape on: everything from the database is text) and the small
formatting helpers the pages share."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

from inbox._operations.term import human_duration
from inbox.console._session import session_of

__all__ = ["KIND_NAMES", "body_view", "render", "url_for"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("inbox.console", "templates"),
    autoescape=True,  # every template, whatever its name: nothing from the database is markup
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

# What the pages call each kind of audited action (``AuditKind``: a run's page, the audit,
# an event's runs): one name per kind, here, so that no page names a run by another's kind.
KIND_NAMES: dict[str, str] = {
    "replay": "Replay run",
    "dead-retry": "Dead-letter retry",
    "dead-skip": "Dead-letter skip",
    "rehearsal": "Rehearsal",
    "prune": "Prune",
}

HEX_LIMIT = 64 * 1024  # bytes shown as hex on the page; the download has all of them


def url_for(request: Request, path: str, **query: Any) -> str:
    """``path`` under the console's mount point, with the non-empty ``query`` values."""
    base = str(request.scope.get("root_path", "")).rstrip("/")
    params = [(k, v) for k, v in query.items() if v not in (None, "", False)]
    return base + path + ("?" + urlencode(params, doseq=True) if params else "")


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _when_range(first: datetime, last: datetime) -> str:
    """``first`` to ``last``, the date and zone written once when they share them."""
    start, end = _when(first), _when(last)
    if start == end:
        return start
    if start[:10] == end[:10]:
        return f"{start.removesuffix(' UTC')} to {end[11:]}"
    return f"{start} to {end}"


def _ago(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    seconds = (datetime.now(UTC) - moment).total_seconds()
    if abs(seconds) < 1:
        return "just now"
    return f"{human_duration(seconds)} ago" if seconds > 0 else f"in {human_duration(seconds)}"


def _duration(value: timedelta | float | None) -> str:
    if value is None:
        return "-"
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return human_duration(seconds)


def _kind_name(kind: str) -> str:
    # A kind the database allows but this map lacks (a newer schema) shows as it is stored.
    return KIND_NAMES.get(kind, kind)


_ENV.filters.update(
    when=_when, when_range=_when_range, ago=_ago, duration=_duration, kind_name=_kind_name
)


def hex_dump(data: bytes) -> str:
    """Offset, 16 bytes in hex, and their printable ASCII, one line per 16 bytes."""
    lines = []
    for offset in range(0, min(len(data), HEX_LIMIT), 16):
        chunk = data[offset : offset + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {chunk.hex(' '):<47}  {text}")
    if len(data) > HEX_LIMIT:
        lines.append(f"... {len(data) - HEX_LIMIT} more bytes: download the body to see them")
    return "\n".join(lines)


def body_view(body: bytes) -> tuple[str, str]:
    """How to show a body: ("json", pretty), ("text", text) or ("hex", dump)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "hex", hex_dump(body)
    try:
        return "json", json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        pass
    if any(ord(c) < 32 and c not in "\r\n\t" for c in text):
        return "hex", hex_dump(body)
    return "text", text


def render(
    request: Request, template: str, context: dict[str, Any], *, status: int = 200
) -> HTMLResponse:
    principal = request.scope.get("inbox.console.principal")
    values = {
        "request": request,
        "url": lambda path, **q: url_for(request, path, **q),
        "csrf": session_of(request).csrf,
        "me": principal,
        "q": request.query_params.get("q", ""),
        "live_refresh": False,
        **context,
    }
    html = _ENV.get_template(template).render(values)
    return HTMLResponse(html, status_code=status)
