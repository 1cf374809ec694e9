"""The seeded inbox the console tests (HTTP and browser) look at: real writes, and a real
worker whose handlers fail on purpose, so attempts carry errors and some events are dead."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from inbox import InboxWriter
from processors import Event, Router
from tests._log import seed_events
from tests.processors._support import run_until_settled, settings

XSS = "<script>alert('x')</script>"
PAGING_COUNT = 60
DEAD_COUNT = 3


@dataclass(frozen=True)
class Seeded:
    """What the seeded database holds (ids are the same in every clone)."""

    url: str
    key_event: int
    """stripe:evt_123: 3 deliveries (one with a differing body), 2 attempts (the first
    failed with an error), processed."""
    key: str
    xss_event: int
    """``<script>`` in its key, type, a header, its body, its attempts' errors and a
    traceback (dead)."""
    binary_event: int
    """A body that is not text (shown as hex)."""
    dead_ids: list[int] = field(default_factory=list)
    paging_ids: list[int] = field(default_factory=list)
    """shop order.paid events, processed, oldest first."""
    pending_id: int = 0
    """Written after the worker stopped: still pending."""
    shared_key: str = "dup-key"
    shared_key_ids: list[int] = field(default_factory=list)
    """Events of two sources with the same provider key (a search lists both)."""


router = Router()


@router.on("stripe", "*")
async def stripe(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    if event.attempt == 1 and event.key == "evt_123":
        raise ValueError("card_declined: amount 4200 does not match the invoice")


@router.on("shop", "order.broken")
async def broken(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    raise RuntimeError(f"cannot parse order {event.key}")


@router.on("xss", "*")
async def xss(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    raise ValueError(XSS)


@router.on("*", "*")
async def anything(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
    return None


def settle(url: str) -> None:
    """Run a worker with the seed's handlers until nothing is pending (two attempts each,
    so an event that always fails ends dead)."""
    run_until_settled(url, router, worker_settings=settings(max_attempts=2))


def seed(url: str) -> Seeded:
    with InboxWriter(url) as w:
        paging = [
            w.write(
                "shop", f"order-{n}", f'{{"n": {n}}}'.encode(), event_type="order.paid"
            ).event_id
            for n in range(PAGING_COUNT)
        ]
        body = b'{"id": "evt_123", "type": "invoice.paid", "amount": 4200}'
        key_event = w.write(
            "stripe",
            "evt_123",
            body,
            headers={"stripe-signature": "t=1,v1=abc", "authorization": "Bearer secret"},
            event_type="invoice.paid",
        ).event_id
        w.write("stripe", "evt_123", body, event_type="invoice.paid")
        w.write("stripe", "evt_123", body.replace(b"4200", b"4300"), event_type="invoice.paid")
        xss_event = w.write(
            "xss", XSS, f'{{"note": "{XSS}"}}'.encode(), headers={"x-evil": XSS}, event_type=XSS
        ).event_id
        binary = w.write("bin", "blob-1", bytes(range(256)), event_type="blob").event_id
        dead = [
            w.write("shop", f"broken-{n}", b'{"n": 0}', event_type="order.broken").event_id
            for n in range(DEAD_COUNT)
        ]
        shared = [
            w.write(source, "dup-key", b"{}", event_type="ping").event_id
            for source in ("github", "slack")
        ]
    settle(url)
    with InboxWriter(url) as w:
        pending = w.write("shop", "late-1", b'{"n": 1}', event_type="order.paid").event_id
    return Seeded(
        url=url,
        key_event=key_event,
        key="evt_123",
        xss_event=xss_event,
        binary_event=binary,
        dead_ids=dead,
        paging_ids=paging,
        pending_id=pending,
        shared_key_ids=shared,
    )


# What two console tests (HTTP and browser) add to a clone of the seed.

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def hold_an_ordered_key(url: str) -> None:
    """Key ``cus_1`` of source ``ordered``: its head dead (hold, the ordered default), so
    its follower waits."""
    with InboxWriter(url, notify="off") as writer:
        head = writer.write("ordered", "o-1", b"{}", ordering_key="cus_1").event_id
        writer.write("ordered", "o-2", b"{}", ordering_key="cus_1")
    with psycopg.connect(url) as conn:
        conn.execute("update inbox_work set state = 'dead' where event_id = %s", [head])


def traced_event(url: str) -> int:
    """An event received under trace ``TRACE_ID`` (its stored traceparent); its id."""
    with psycopg.connect(url) as conn:
        [event_id] = seed_events(
            conn,
            "select 'shop' as source, 'traced' as idempotency_key, '{}' as body, %s as traceparent",
            [f"00-{TRACE_ID}-00f067aa0ba902b7-01"],
        )
    return event_id


# Workers of two versions of the code, running while a test looks: the old one and a fix.
OLD_VERSION = "4c1d9e2"
FIXED_VERSION = "9f3b7a1"
TWO_VERSIONS = {"web-1:4101": OLD_VERSION, "web-2:4102": FIXED_VERSION, "web-3:4103": FIXED_VERSION}


@contextmanager
def running_workers(url: str, workers: Mapping[str, str]) -> Iterator[None]:
    """Worker processes (name: version) that run while the block does: each reports its
    version as a worker does, and holds a connection of its own open, which is how the
    operator's queries tell a running worker from one that was killed (and its listener's,
    so that none looks deaf). They started 20 minutes apart, the first listed first."""
    with psycopg.connect(url, autocommit=True) as conn:
        for n, (name, version) in enumerate(workers.items()):
            conn.execute(
                "insert into inbox_workers (name, version, started_at)"
                " values (%s, %s, now() - make_interval(mins => %s))",
                [name, version, 20 * (len(workers) - n)],
            )
    with ExitStack() as connections:
        for name in workers:
            for label in (f"pg-inbox worker {name}/0", f"pg-inbox listener {name}"):
                connections.enter_context(psycopg.connect(url, application_name=label))
        yield
