"""Where a delivery's idempotency key and event type come from: pure functions of the request.

Every provider puts its delivery id somewhere else (a header, a field of the JSON body, a
form field); a source's ``key_from`` / ``type_from`` overrides the provider's default with
one *spec*:

==================  ===========================================================
``header:<name>``   the request header ``<name>`` (case-insensitive)
``json:<pointer>``  an RFC 6901 JSON pointer into the body (``json:/data/id``)
``form:<field>``    a field of a form-encoded body
``body-sha256``     the hex SHA-256 of the raw body (the key only: identical bodies
                    are then one event)
==================  ===========================================================

A provider's record (``inbox._providers``) holds its defaults; a default may be a chain of
specs, tried in order (Shopify: the event id, else the webhook id). The same specs also work
backwards, ``inject``-ing a key and type into the sample that ``inbox send`` signs, so a send
honours a source's overrides.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from inbox._core.config.specs import Spec, parse_spec
from inbox._providers import WebhookRequest, provider
from inbox._providers._base import FORM_CONTENT_TYPE, parse_form

__all__ = [
    "Extracted",
    "Extraction",
    "Spec",
    "extraction_for",
    "inject",
    "parse_spec",
    "parse_timestamp",
]


class _Body:
    """The body parsed at most once per request, as JSON or as a form, on demand."""

    _UNPARSED: Any = object()

    def __init__(self, request: WebhookRequest) -> None:
        self._request = request
        self._json: Any = self._UNPARSED
        self._form: dict[str, str] | None = None
        self.not_json = False  # a json: spec was tried and the body does not parse

    def json(self) -> Any:
        if self._json is self._UNPARSED:
            try:
                self._json = json.loads(self._request.body)
            # RecursionError: a hostile, deeply nested body; ValueError covers bad UTF-8,
            # bad JSON and integers too long to convert.
            except (ValueError, RecursionError):
                self._json = None
                self.not_json = True
        return self._json

    def form(self) -> dict[str, str]:
        if self._form is None:
            pairs = self._request.form_params
            if not pairs and self._request.content_type == FORM_CONTENT_TYPE:
                # Percent-escapes in another charset than declared (Alipay declares its
                # charset inside the body): latin-1 decodes anything, and keeps ASCII exact.
                pairs = parse_form(self._request.body, charset="latin-1")
            form: dict[str, str] = {}
            for name, value in pairs:
                form.setdefault(name, value)  # the first of repeated names
            self._form = form
        return self._form


def _pointer(document: Any, pointer: str) -> Any:
    """Resolve an RFC 6901 pointer; None when any step is missing."""
    if pointer == "":
        return document
    node = document
    for raw in pointer[1:].split("/"):
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            if step not in node:
                return None
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and step.isascii():
            index = int(step)
            if index >= len(node) or (step != "0" and step.startswith("0")):
                return None
            node = node[index]
        else:
            return None
    return node


def _as_text(value: Any) -> str | None:
    """A key or type is a non-empty string, or an integer written as one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _lookup(spec: Spec, request: WebhookRequest, body: _Body) -> str | None:
    if spec.kind == "header":
        return _as_text(request.headers.get(spec.arg, "").strip())
    if spec.kind == "json":
        return _as_text(_pointer(body.json(), spec.arg))
    if spec.kind == "form":
        return _as_text(body.form().get(spec.arg))
    return hashlib.sha256(request.body).hexdigest()


def parse_timestamp(value: Any) -> datetime | None:
    """A provider's timestamp: Unix seconds (a number, or digits in a string, as Stripe's
    ``created``) or ISO 8601 text (a zone-less one is read as UTC); None if it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                return None
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    if isinstance(value, int | float) and math.isfinite(value):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _raw(spec: Spec, request: WebhookRequest, body: _Body) -> Any:
    """What a spec points at, untyped (a timestamp may be a number)."""
    if spec.kind == "json":
        return _pointer(body.json(), spec.arg)
    return _lookup(spec, request, body)


@dataclass(frozen=True, slots=True)
class Extracted:
    """What a delivery says of itself. ``ordering_key`` is None for an unordered source or
    when its spec matched nothing; ``order_at`` None means: ordered by arrival."""

    key: str | None
    event_type: str | None
    ordering_key: str | None = None
    order_at: datetime | None = None
    # Where the key was looked for, when it was not found: the refusal's detail says it.
    key_sought: str = ""


@dataclass(frozen=True, slots=True)
class Extraction:
    """The specs of one source: the key's (at least one) and the type's (possibly none);
    for an ordered source, its ordering key's and its order timestamp's."""

    key_specs: tuple[Spec, ...]
    type_specs: tuple[Spec, ...]
    ordering_spec: Spec | None = None
    order_spec: Spec | None = None

    def extract(self, request: WebhookRequest) -> tuple[str | None, str | None]:
        """Return ``(key, event_type)``; either is None when no spec yields a value."""
        found = self.read(request)
        return found.key, found.event_type

    def read(self, request: WebhookRequest) -> Extracted:
        """Everything the specs find, the body parsed at most once."""
        body = _Body(request)
        key = next(
            (v for s in self.key_specs if (v := _lookup(s, request, body)) is not None), None
        )
        sought = "" if key is not None else self._key_sought(body)
        event_type = next(
            (v for s in self.type_specs if (v := _lookup(s, request, body)) is not None), None
        )
        if self.ordering_spec is None:
            return Extracted(key, event_type, key_sought=sought)
        ordering_key = _lookup(self.ordering_spec, request, body)
        order_at = None
        if self.order_spec is not None:
            order_at = parse_timestamp(_raw(self.order_spec, request, body))
        return Extracted(key, event_type, ordering_key, order_at, key_sought=sought)

    def _key_sought(self, body: _Body) -> str:
        """The key's specs, and why a json: one could not look: a body that is not JSON is
        the sender's mistake, not a key_from to change."""
        specs = ", ".join(str(spec) for spec in self.key_specs)
        return f"{specs}; the body is not JSON" if body.not_json else specs


def extraction_for(
    verifier: str,
    *,
    key_from: str | None = None,
    type_from: str | None = None,
    options: Mapping[str, object] | None = None,
    ordering_key: str | None = None,
    order_by: str | None = None,
) -> Extraction:
    """The extraction of a source: its overrides, else its provider's defaults."""
    record = provider(verifier)
    if key_from:
        key_specs: tuple[Spec, ...] = (parse_spec(key_from),)
    else:
        key_specs = record.key_specs
        if record.option_key_specs is not None:
            key_specs = (*record.option_key_specs(options or {}), *key_specs)
    if type_from:
        type_specs: tuple[Spec, ...] = (parse_spec(type_from),)
    else:
        type_specs = record.type_specs
    return Extraction(
        key_specs,
        type_specs,
        ordering_spec=parse_spec(ordering_key) if ordering_key else None,
        order_spec=parse_spec(order_by) if order_by else None,
    )


def _list_index(node: list[Any], step: str, spec: Spec) -> int:
    """The index ``step`` names in ``node``, as the reader takes it; only an existing item
    can be written into (a sample's list is the provider's shape, not to be grown)."""
    if step.isdigit() and step.isascii() and (step == "0" or not step.startswith("0")):
        index = int(step)
        if index < len(node):
            return index
    raise ValueError(f"{spec}: the sample has no item {step!r} to write into")


def inject(
    spec: Spec, value: str, *, payload: dict[str, Any] | list[Any], headers: dict[str, str]
) -> None:
    """Put ``value`` where ``spec`` reads it from: a header, a (nested) field, a form field.

    ``payload`` is the sample before encoding (a JSON object or array, or the form's
    fields). A pointer walks the items of lists the sample has (HubSpot's ``json:/0/eventId``)
    and creates missing objects. A ``body-sha256`` key needs nothing: a fresh value elsewhere
    in the body makes it fresh. Raises ``ValueError`` for a list item the sample lacks.
    """
    if spec.kind == "header":
        headers[spec.arg] = value
    elif spec.kind == "form" and isinstance(payload, dict):
        payload[spec.arg] = value
    elif spec.kind == "json" and spec.arg:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in spec.arg[1:].split("/")]
        node: dict[str, Any] | list[Any] = payload
        for step in tokens[:-1]:
            if isinstance(node, list):
                node = node[_list_index(node, step, spec)]
                if not isinstance(node, dict | list):
                    raise ValueError(f"{spec}: the sample's item {step!r} is not an object")
                continue
            child = node.get(step)
            if not isinstance(child, dict | list):
                child = node[step] = {}
            node = child
        if isinstance(node, list):
            node[_list_index(node, tokens[-1], spec)] = value
        else:
            node[tokens[-1]] = value
