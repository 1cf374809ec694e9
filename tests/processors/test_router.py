"""Routing: the most specific handler wins; nothing is silently dropped."""

from __future__ import annotations

from typing import Any

import pytest

from processors import Event, Router


async def a(event: Event, conn: Any) -> None: ...
async def b(event: Event, conn: Any) -> None: ...
async def c(event: Event, conn: Any) -> None: ...
def d(event: Event, conn: Any) -> None: ...


def _routed(*routes: tuple[str, str, Any]) -> Router:
    router = Router()
    for source, event_type, handler in routes:
        router.on(source, event_type)(handler)
    return router


def _handler(router: Router, source: str, event_type: str | None) -> Any:
    """The handler ``router`` picks (the test fails when it picks none)."""
    route = router.resolve(source, event_type)
    assert route is not None, (source, event_type)
    return route.handler


def test_exact_type_beats_glob_beats_star() -> None:
    router = _routed(("stripe", "*", a), ("stripe", "invoice.*", b), ("stripe", "invoice.paid", c))
    assert _handler(router, "stripe", "invoice.paid") is c
    assert _handler(router, "stripe", "invoice.voided") is b
    assert _handler(router, "stripe", "charge.refunded") is a
    assert _handler(router, "stripe", None) is a


def test_longer_glob_beats_shorter_and_exact_source_beats_any_source() -> None:
    router = _routed(("*", "invoice.*", a), ("stripe", "invoice.*", b), ("stripe", "inv*", c))
    assert _handler(router, "stripe", "invoice.paid") is b
    assert _handler(router, "github", "invoice.paid") is a


def test_a_route_added_after_events_were_routed_takes_its_events_from_then_on() -> None:
    router = _routed(("stripe", "*", a))
    assert _handler(router, "stripe", "invoice.paid") is a
    assert router.resolve("github", "push") is None
    router.on("stripe", "invoice.paid")(b)
    other = _routed(("github", "*", c))
    router.include(other)
    assert _handler(router, "stripe", "invoice.paid") is b
    assert _handler(router, "github", "push") is c


def test_many_event_types_are_each_routed_right() -> None:
    # More types than the router keeps answers for: the ones it forgot are matched again.
    router = _routed(("stripe", "*", a), ("stripe", "invoice.*", b))
    for round_no in range(2):
        for n in range(3000):
            expected = b if n % 2 else a
            event_type = f"invoice.t{n}" if n % 2 else f"charge.t{n}"
            assert _handler(router, "stripe", event_type) is expected, (round_no, n)


def test_sync_and_async_handlers_are_told_apart() -> None:
    router = _routed(("s", "x", a), ("s", "y", d))
    assert router.resolve("s", "x").is_async  # type: ignore[union-attr]
    assert not router.resolve("s", "y").is_async  # type: ignore[union-attr]


def test_routers_combine_and_clashes_are_errors() -> None:
    payments, shipping = Router(), Router()
    payments.on("stripe", "invoice.paid")(a)
    shipping.on("shopify", "orders/create")(b)
    app = Router()
    app.include(payments)
    app.include(shipping)
    assert _handler(app, "shopify", "orders/create") is b
    with pytest.raises(ValueError, match="already routes to"):
        app.include(payments)


def test_event_json_and_immutability() -> None:
    from datetime import UTC, datetime

    event = Event(
        id=1,
        source="s",
        key="k",
        type=None,
        received_at=datetime.now(UTC),
        headers={},
        body=b'{"a": [1]}',
        attempt=1,
    )
    assert event.json() == {"a": [1]}
    with pytest.raises(ValueError, match="frozen"):
        event.attempt = 2  # type: ignore[misc]


async def many(events: list[Event], conn: Any) -> None: ...


def test_a_batch_route_is_marked_kept_by_include_and_clashes_like_any_route() -> None:
    router = Router()
    router.on_batch("shop", "order.*", timeout_seconds=5)(many)
    router.on("shop", "order.paid")(a)
    combined = Router()
    combined.include(router)
    batch_route = combined.resolve("shop", "order.refunded")
    assert batch_route is not None
    assert (batch_route.handler, batch_route.batch, batch_route.timeout_seconds) == (many, True, 5)
    single = combined.resolve("shop", "order.paid")
    assert single is not None
    assert (single.handler, single.batch) == (a, False)
    with pytest.raises(ValueError, match="already routes to"):
        combined.on("shop", "order.*")(b)
