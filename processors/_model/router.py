"""Which handler runs for an event: ``@router.on(source, event_type_glob)``, or
``@router.on_batch(...)`` for a handler that takes a claimed batch's events together.

The most specific match wins: an exact type over a glob over ``"*"`` (a glob with more
literal characters over one with fewer), and an exact source over ``"*"``.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from processors._model.event import Event

__all__ = ["BatchHandler", "Handler", "Route", "Router"]

AsyncHandler = Callable[[Event, Any], Awaitable[None]]
SyncHandler = Callable[[Event, Any], None]
Handler = AsyncHandler | SyncHandler
AsyncBatchHandler = Callable[[list[Event], Any], Awaitable[None]]
SyncBatchHandler = Callable[[list[Event], Any], None]
BatchHandler = AsyncBatchHandler | SyncBatchHandler

_WILDCARDS = set("*?[")
# The (source, event type) answers a router keeps.
_RESOLVED = 1024


@dataclass(frozen=True, slots=True)
class Route:
    """One handler's registration (``Router.on``, ``Router.on_batch``): the source (``*``
    for any) and the glob of event types it takes."""

    source: str
    event_type: str
    handler: Handler | BatchHandler
    is_async: bool
    timeout_seconds: float | None
    # The handler takes a list of events (on_batch), not one.
    batch: bool = False
    # Safe to run in a rehearsal: it does nothing outside the database that a rollback
    # would not undo (or checks event.is_rehearsal first).
    rehearse: bool = False
    # The handler's dotted name, which every attempt records: made once, not per event.
    name: str = field(init=False)

    def __post_init__(self) -> None:
        module = getattr(self.handler, "__module__", "?")
        qualname = getattr(self.handler, "__qualname__", repr(self.handler))
        object.__setattr__(self, "name", f"{module}.{qualname}")

    def specificity(self) -> tuple[int, int, int]:
        """Sort key: larger is more specific."""
        exact_source = int(self.source != "*")
        if not _WILDCARDS & set(self.event_type):
            return (2, len(self.event_type), exact_source)
        literal = sum(1 for ch in self.event_type if ch not in _WILDCARDS)
        return (1 if self.event_type != "*" else 0, literal, exact_source)

    def matches(self, source: str, event_type: str | None) -> bool:
        """Whether an event of ``source`` and ``event_type`` routes here (an event with no
        type matches only ``*``)."""
        if self.source not in ("*", source):
            return False
        if self.event_type == "*":
            return True
        return event_type is not None and fnmatch.fnmatchcase(event_type, self.event_type)


class Router:
    """Maps (source, event type) to handlers. Routers combine with ``include``."""

    def __init__(self, *, rehearse: bool = False) -> None:
        """``rehearse``: the default of this router's ``on`` and ``on_batch`` (False: a
        rehearsal skips their handlers unless they say ``rehearse=True``)."""
        self.rehearse = rehearse
        self._routes: list[Route] = []
        # resolve() would match every route's glob for every event: its answers are kept,
        # at most _RESOLVED of them (event types come from payloads, so their number is the
        # sender's to choose), and forgotten when a route is added.
        self._resolved: dict[tuple[str, str | None], Route | None] = {}

    def on(
        self,
        source: str,
        event_type: str = "*",
        *,
        timeout_seconds: float | None = None,
        rehearse: bool | None = None,
    ) -> Callable[[Handler], Handler]:
        """Register the decorated function for ``source`` events whose type matches the glob.

        ``async def`` handlers get the claim transaction's ``psycopg.AsyncConnection``;
        plain ``def`` handlers get a sync ``psycopg.Connection`` in the same transaction and
        run in a worker thread. ``timeout_seconds`` overrides the worker's handler deadline.
        ``rehearse=True``: the handler may run in a rehearsal (``inbox replay --rehearse``),
        because it does nothing outside the database, or nothing when
        ``event.is_rehearsal``; default: the router's.
        """
        return self._register(source, event_type, timeout_seconds, rehearse, batch=False)

    def on_batch(
        self,
        source: str,
        event_type: str = "*",
        *,
        timeout_seconds: float | None = None,
        rehearse: bool | None = None,
    ) -> Callable[[BatchHandler], BatchHandler]:
        """Register the decorated function to take, in one call, every event of a claimed
        batch that routes to it and comes from one source, as a list in claim order: for
        set-based business writes (one ``executemany`` or ``unnest`` insert for the batch
        instead of a statement per event).

        It runs in the claim transaction like an ``on`` handler (async or sync, the same
        connections). If it raises, the batch's writes are undone and it is called again
        once per event, each in a savepoint of its own, so the failure (or ``Retry``) is
        charged to the event that causes it and the others commit once: it must decide
        each event on its own merits, as the same call with a list of one. An ordered
        source's list holds at most one event per key (a claim takes only keys' heads).
        ``timeout_seconds`` bounds the whole call; ``rehearse`` as for ``on`` (a rehearsal
        calls it with a list of one event).
        """
        return self._register(source, event_type, timeout_seconds, rehearse, batch=True)

    def _register(
        self,
        source: str,
        event_type: str,
        timeout_seconds: float | None,
        rehearse: bool | None,
        *,
        batch: bool,
    ) -> Callable[[Any], Any]:
        if not source:
            raise ValueError("a route needs a source (or '*')")

        def register(handler: Any) -> Any:
            self._add(
                Route(
                    source=source,
                    event_type=event_type,
                    handler=handler,
                    is_async=inspect.iscoroutinefunction(handler),
                    timeout_seconds=timeout_seconds,
                    batch=batch,
                    rehearse=self.rehearse if rehearse is None else rehearse,
                )
            )
            return handler

        return register

    def _add(self, route: Route) -> None:
        for existing in self._routes:
            if (existing.source, existing.event_type) == (route.source, route.event_type):
                raise ValueError(
                    f"{route.source}/{route.event_type} already routes to {existing.name};"
                    f" cannot route it to {route.name} too"
                )
        self._routes.append(route)
        self._resolved.clear()

    def include(self, other: Router) -> None:
        """Add every route of ``other`` (a clash of identical patterns is an error)."""
        for route in other._routes:
            self._add(route)

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
