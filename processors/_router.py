"""Which handler runs for an event: ``@router.on(source, event_type_glob)``.

The most specific match wins: an exact type over a glob over ``"*"`` (a glob with more
literal characters over one with fewer), and an exact source over ``"*"``.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from processors._event import Event

__all__ = ["Handler", "Route", "Router"]

AsyncHandler = Callable[[Event, Any], Awaitable[None]]
SyncHandler = Callable[[Event, Any], None]
Handler = AsyncHandler | SyncHandler

_WILDCARDS = set("*?[")
# The (source, event type) answers a router keeps.
_RESOLVED = 1024


@dataclass(frozen=True, slots=True)
class Route:
    source: str
    event_type: str
    handler: Handler
    is_async: bool
    timeout_seconds: float | None

    @property
    def name(self) -> str:
        module = getattr(self.handler, "__module__", "?")
        qualname = getattr(self.handler, "__qualname__", repr(self.handler))
        return f"{module}.{qualname}"

    def specificity(self) -> tuple[int, int, int]:
        """Sort key: larger is more specific."""
        exact_source = int(self.source != "*")
        if not _WILDCARDS & set(self.event_type):
            return (2, len(self.event_type), exact_source)
        literal = sum(1 for ch in self.event_type if ch not in _WILDCARDS)
        return (1 if self.event_type != "*" else 0, literal, exact_source)

    def matches(self, source: str, event_type: str | None) -> bool:
        if self.source not in ("*", source):
            return False
        if self.event_type == "*":
            return True
        return event_type is not None and fnmatch.fnmatchcase(event_type, self.event_type)


class Router:
    """Maps (source, event type) to handlers. Routers combine with ``include``."""

    def __init__(self) -> None:
        self._routes: list[Route] = []
        # resolve() per event matched every route's glob (~1.5 us an event with one route):
        # its answers are kept, at most _RESOLVED of them (event types come from payloads,
        # so their number is the sender's to choose), and forgotten when a route is added.
        self._resolved: dict[tuple[str, str | None], Route | None] = {}

    def on(
        self, source: str, event_type: str = "*", *, timeout_seconds: float | None = None
    ) -> Callable[[Handler], Handler]:
        """Register the decorated function for ``source`` events whose type matches the glob.

        ``async def`` handlers get the claim transaction's ``psycopg.AsyncConnection``;
        plain ``def`` handlers get a sync ``psycopg.Connection`` in the same transaction and
        run in a worker thread. ``timeout_seconds`` overrides the worker's handler deadline.
        """
        if not source:
            raise ValueError("a route needs a source (or '*')")

        def register(handler: Handler) -> Handler:
            route = Route(
                source=source,
                event_type=event_type,
                handler=handler,
                is_async=inspect.iscoroutinefunction(handler),
                timeout_seconds=timeout_seconds,
            )
            for existing in self._routes:
                if (existing.source, existing.event_type) == (source, event_type):
                    raise ValueError(
                        f"{source}/{event_type} already routes to {existing.name};"
                        f" cannot route it to {route.name} too"
                    )
            self._routes.append(route)
            self._resolved.clear()
            return handler

        return register

    def include(self, other: Router) -> None:
        """Add every route of ``other`` (a clash of identical patterns is an error)."""
        for route in other._routes:
            self.on(route.source, route.event_type, timeout_seconds=route.timeout_seconds)(
                route.handler
            )

    def resolve(self, source: str, event_type: str | None) -> Route | None:
        """The most specific route for an event, or None when nothing matches."""
        key = (source, event_type)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        candidates = [r for r in self._routes if r.matches(source, event_type)]
        route = max(candidates, key=Route.specificity) if candidates else None
        if len(self._resolved) >= _RESOLVED:
            self._resolved.clear()
        self._resolved[key] = route
        return route

    @property
    def routes(self) -> tuple[Route, ...]:
        return tuple(self._routes)
