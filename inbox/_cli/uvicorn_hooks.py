"""Where the receiver reaches into uvicorn's private parts: checked once at start-up, and
when uvicorn no longer has what the hook needs, the receiver runs on uvicorn's public
options instead, with one warning line (a renamed attribute must cost limits and speed,
never a crash).

The hook is ``inbox._cli.http_limits``: a subclass of uvicorn's ``HttpToolsProtocol`` that
overrides its ``__init__``, ``connection_made``, ``data_received``, ``on_headers_complete``,
``on_message_complete`` and ``send_400_response``, reads and writes the attributes their
code sets (``loop``, ``transport``, ``flow``, ``headers``, ``url``, ``cycle``, and the
cycle's ``response_complete``, ``disconnected`` and ``message_event``), keeps a weak
reference to each ``ServerState`` and walks its ``connections``, and stops httptools' parser
by raising in a callback, which httptools re-raises as an ``HttpParserError``.

Off, the receiver runs on uvicorn's h11 protocol (a parser in pure Python: more CPU a
request than httptools') with h11's bound on an unfinished head (``h11_max_incomplete_event_size``,
``max_header_bytes``: answered 400, not 431), uvicorn's ``limit_concurrency``
(``max_connections``: 503) and its idle keep-alive timeout, as on. Not enforced then:
``max_headers`` (the head's size still bounds them), ``head_timeout_seconds`` and
``body_timeout_seconds``, for which uvicorn has no option.

``INBOX_UVICORN_HOOKS=off`` turns the hook off (for a comparison, or a uvicorn this release
has not seen); the tests serve both ways. The supported versions are the ones pyproject.toml
allows.
"""

from __future__ import annotations

import dis
import inspect
import os
import weakref
from collections.abc import Callable
from typing import Any

from inbox._core.config.settings import ReceiverSettings
from inbox._core.logs import get_logger

__all__ = ["HOOKS_ENV", "http_options", "missing"]

log = get_logger("inbox.receiver")

HOOKS_ENV = "INBOX_UVICORN_HOOKS"

# What the hook calls of HttpToolsProtocol, with the parameters it passes (after self).
_METHODS = {
    "connection_made": ["transport"],
    "data_received": ["data"],
    "on_headers_complete": [],
    "on_message_complete": [],
    "send_400_response": ["msg"],
}
_PROTOCOL_ATTRIBUTES = ("loop", "transport", "flow", "headers", "url", "cycle")
_CYCLE_ATTRIBUTES = ("response_complete", "disconnected", "message_event")

# What is and is not enforced when the hook is off (the [receiver] settings' names).
FALLBACK_ENFORCES = ("max_header_bytes (as a 400)", "max_connections")
FALLBACK_DROPS = ("max_headers", "head_timeout_seconds", "body_timeout_seconds")


def _parameters(function: Callable[..., Any]) -> list[str] | None:
    try:
        return list(inspect.signature(function).parameters)[1:]
    except (TypeError, ValueError):
        return None


def _assigned(cls: type) -> set[str]:
    """The attributes that the code of ``cls``'s own methods assigns (``self.x = ...``)."""
    names: set[str] = set()
    for value in vars(cls).values():
        code = getattr(value, "__code__", None)
        if code is not None:
            names |= {i.argval for i in dis.get_instructions(code) if i.opname == "STORE_ATTR"}
    return names


def _protocol_missing(protocol: type, cycle: type) -> list[str]:
    missing = []
    try:  # a class's signature is its __init__'s without self
        init: list[str] | None = list(inspect.signature(protocol).parameters)
    except (TypeError, ValueError):
        init = None
    if init is None or init[:2] != ["config", "server_state"]:
        missing.append(f"HttpToolsProtocol.__init__(config, server_state, ...) (has {init})")
    for name, wanted in _METHODS.items():
        method = getattr(protocol, name, None)
        found = None if method is None else _parameters(method)
        if found != wanted:
            missing.append(f"HttpToolsProtocol.{name}({', '.join(wanted)})")
    # A callback's exception reaches the hook's send_400_response through data_received.
    names = getattr(getattr(protocol, "data_received", None), "__code__", None)
    if names is None or not {"HttpParserError", "send_400_response"} <= set(names.co_names):
        missing.append("HttpToolsProtocol.data_received answering HttpParserError with a 400")
    sets = _assigned(protocol)
    missing += [f"HttpToolsProtocol.{a}" for a in _PROTOCOL_ATTRIBUTES if a not in sets]
    sets = _assigned(cycle)
    missing += [f"RequestResponseCycle.{a}" for a in _CYCLE_ATTRIBUTES if a not in sets]
    return missing


def missing() -> list[str]:
    """What the hook needs of uvicorn (and httptools) that the installed versions lack."""
    try:
        return _lacks()
    except Exception as exc:  # noqa: BLE001 - a uvicorn too changed to inspect lacks the hook too
        return [f"an HttpToolsProtocol the check can read ({type(exc).__name__}: {exc})"]


def _lacks() -> list[str]:
    try:
        import httptools
        from uvicorn.protocols.http import flow_control, httptools_impl
        from uvicorn.server import ServerState
    except ImportError as exc:
        return [f"an import: {exc}"]
    protocol = getattr(httptools_impl, "HttpToolsProtocol", None)
    cycle = getattr(httptools_impl, "RequestResponseCycle", None)
    if not isinstance(protocol, type) or not isinstance(cycle, type):
        return ["uvicorn.protocols.http.httptools_impl.HttpToolsProtocol, RequestResponseCycle"]
    found = _protocol_missing(protocol, cycle)
    if not callable(getattr(getattr(flow_control, "FlowControl", None), "resume_reading", None)):
        found.append("FlowControl.resume_reading")
    try:
        state = ServerState()
        weakref.ref(state)
        if not isinstance(getattr(state, "connections", None), set):
            found.append("ServerState().connections, a set")
    except TypeError as exc:  # takes arguments now, or no weak reference
        found.append(f"ServerState() weakly referenced ({exc})")
    parse_error = getattr(httptools, "HttpParserError", None)
    callback_error = getattr(httptools, "HttpParserCallbackError", None)
    if not (
        isinstance(parse_error, type)
        and isinstance(callback_error, type)
        and issubclass(callback_error, parse_error)
    ):
        found.append("httptools.HttpParserCallbackError, an HttpParserError")
    return found


def _forced_off() -> bool:
    return os.environ.get(HOOKS_ENV, "").strip().lower() in {"0", "off", "false", "no"}


def _limited_protocol(limits: ReceiverSettings) -> type:
    from inbox._cli.http_limits import HttpLimits, limited_protocol  # imports the hook

    return limited_protocol(
        HttpLimits(
            max_header_bytes=limits.max_header_bytes,
            max_headers=limits.max_headers,
            head_timeout_seconds=limits.head_timeout_seconds,
            body_timeout_seconds=limits.body_timeout_seconds,
        )
    )


def http_options(limits: ReceiverSettings) -> dict[str, Any]:
    """The ``uvicorn.Config`` options that enforce ``limits`` on the client's side:
    the hook's protocol, or, when it is off or does not fit, h11's with one warning line."""
    if _forced_off():
        reasons = [f"turned off by {HOOKS_ENV}"]
    elif lacks := missing():
        from importlib.metadata import version

        reasons = [f"uvicorn {version('uvicorn')} lacks {', '.join(lacks)}"]
    else:
        try:
            return {"http": _limited_protocol(limits)}
        except (ImportError, AttributeError, TypeError) as exc:  # a change the check missed
            reasons = [f"{type(exc).__name__}: {exc}"]
    log.warning(
        "uvicorn_hooks_off",
        reasons=reasons,
        falls_back_to="uvicorn's h11 protocol (more CPU a request)",
        enforced=list(FALLBACK_ENFORCES),
        not_enforced=list(FALLBACK_DROPS),
    )
    return {"http": "h11", "h11_max_incomplete_event_size": limits.max_header_bytes}
