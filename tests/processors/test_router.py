"""Routing: the most specific handler wins; nothing is silently dropped."""

from __future__ import annotations

from typing import Any

import pytest

from processors import Event, Router


async def a(event: Event, conn: Any) -> None: ...
async def b(event: Event, conn: Any) -> None: ...
async def c(event: Event, conn: Any) -> None: ...
def d(event: Event, conn: Any) -> None: ...


def test_exact_type_beats_glob_beats_star() -> None:
    router = Router()
    router.on("stripe", "*")(a)
    router.on("stripe", "invoice.*")(b)
    router.on("stripe", "invoice.paid")(c)
    assert router.resolve("stripe", "invoice.paid").handler is c  # type: ignore[union-attr]
    assert router.resolve("stripe", "invoice.voided").handler is b  # type: ignore[union-attr]
    assert router.resolve("stripe", "charge.refunded").handler is a  # type: ignore[union-attr]
    assert router.resolve("stripe", None).handler is a  # type: ignore[union-attr]


def test_longer_glob_beats_shorter_and_exact_source_beats_any_source() -> None:
    router = Router()
    router.on("*", "invoice.*")(a)
    router.on("stripe", "invoice.*")(b)
    router.on("stripe", "inv*")(c)
    assert router.resolve("stripe", "invoice.paid").handler is b  # type: ignore[union-attr]
    assert router.resolve("github", "invoice.paid").handler is a  # type: ignore[union-attr]


def test_no_match_is_none() -> None:
    router = Router()
    router.on("stripe", "invoice.*")(a)
    assert router.resolve("github", "push") is None
    assert router.resolve("stripe", None) is None


def test_sync_and_async_handlers_are_told_apart() -> None:
    router = Router()
    router.on("s", "x")(a)
    router.on("s", "y")(d)
    assert router.resolve("s", "x").is_async  # type: ignore[union-attr]
    assert not router.resolve("s", "y").is_async  # type: ignore[union-attr]


def test_routers_combine_and_clashes_are_errors() -> None:
    payments, shipping = Router(), Router()
    payments.on("stripe", "invoice.paid")(a)
    shipping.on("shopify", "orders/create")(b)
    app = Router()
    app.include(payments)
    app.include(shipping)
    assert app.resolve("shopify", "orders/create").handler is b  # type: ignore[union-attr]
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
