"""Traces from receipt to handler, collected by the SDK's in-memory exporter: a webhook through
the real HTTP receiver gives a receipt span, whose context is stored with the event, and
every handler run (each retry, each replay) is a span of its own linked to it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import psycopg
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from inbox import Settings, queries
from inbox.testing import deliver, signed_request
from processors import Event, Retry, Router
from tests._spans import Spans, traceparent_of
from tests._wait import scalar
from tests.observability._receiver import serving
from tests.processors._support import run_until_empty

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
INCOMING_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
INCOMING_SPAN = "00f067aa0ba902b7"
INCOMING_STATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(
        database={"url": db_url},
        sources=[{"name": "sw", "verifier": "standard-webhooks", "secrets": [SECRET]}],
    )


@pytest.fixture
def receiver(settings: Settings, db_url: str, unused_tcp_port: int) -> Iterator[str]:
    with serving(settings, db_url, unused_tcp_port) as base:
        yield base


def post(
    base: str, settings: Settings, *, extra: dict[str, str | bytes] | None = None
) -> dict[str, Any]:
    request = signed_request(settings, "sw")
    response = httpx.post(
        f"{base}{request.path}",
        content=request.body,
        headers={**request.headers, **(extra or {})},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def stored_traceparent(db_url: str, event_id: int) -> str | None:
    value = scalar(db_url, "select traceparent from inbox_events where id = %s", [event_id])
    return None if value is None else str(value)


def stored_tracestate(db_url: str, event_id: int) -> str | None:
    value = scalar(db_url, "select tracestate from inbox_events where id = %s", [event_id])
    return None if value is None else str(value)


def drain(db_url: str, router: Router) -> None:
    run_until_empty(db_url, router, what="an empty queue")


def assert_linked_to(span: Any, receipt: Any) -> None:
    """A handler span: a trace of its own (no parent), one link, to the receipt."""
    assert span.kind == SpanKind.CONSUMER
    assert span.parent is None
    assert span.context.trace_id != receipt.context.trace_id
    assert [link.context.span_id for link in span.links] == [receipt.context.span_id]
    assert [link.context.trace_id for link in span.links] == [receipt.context.trace_id]


def test_a_webhook_gives_a_receipt_span_and_a_handler_span_linked_through_the_event(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    event_id = post(receiver, settings)["event_id"]
    receipt = spans.one("receive sw")
    assert receipt.kind == SpanKind.PRODUCER
    assert receipt.parent is None  # no traceparent came: a new trace
    assert receipt.attributes is not None
    assert receipt.attributes["messaging.system"] == "pg_inbox"
    assert receipt.attributes["messaging.operation.type"] == "send"
    assert receipt.attributes["messaging.destination.name"] == "sw"
    assert receipt.attributes["messaging.message.id"] == str(event_id)
    assert receipt.attributes["messaging.pg_inbox.outcome"] == "accepted"
    assert receipt.attributes["http.response.status_code"] == 200
    assert stored_traceparent(db_url, event_id) == traceparent_of(receipt)
    assert stored_tracestate(db_url, event_id) is None  # the receipt's span carries none
    # An operator finds the trace from the event (`inbox events show`, the console).
    assert queries.event(db_url, event_id).trace_id == f"{receipt.context.trace_id:032x}"

    seen: list[Any] = []
    router = Router()

    @router.on("sw", "*")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        seen.append(trace.get_current_span().get_span_context())
        await conn.execute("select 1")

    drain(db_url, router)
    handled = spans.one("process sw")
    assert_linked_to(handled, receipt)
    assert not handled.links[0].context.trace_state
    assert handled.attributes is not None
    assert handled.attributes["messaging.operation.type"] == "process"
    assert handled.attributes["messaging.message.id"] == str(event_id)
    assert handled.attributes["messaging.destination.name"] == "sw"
    assert handled.attributes["messaging.pg_inbox.attempt"] == 1
    assert handled.attributes["messaging.pg_inbox.replay"] is False
    assert handled.attributes["messaging.pg_inbox.outcome"] == "processed"
    assert handled.status.status_code == StatusCode.UNSET
    # Current while the handler ran: its database calls would be the span's children.
    assert [context.span_id for context in seen] == [handled.context.span_id]


def test_a_batch_handlers_call_is_one_span_linked_to_every_receipt(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    event_ids = [post(receiver, settings)["event_id"] for _ in range(3)]
    receipts = {
        int(span.attributes["messaging.message.id"]): span for span in spans.named("receive sw")
    }  # type: ignore[index]
    seen: list[Any] = []
    router = Router()

    @router.on_batch("sw")
    async def handle_all(events: list[Event], conn: psycopg.AsyncConnection[Any]) -> None:
        seen.append(trace.get_current_span().get_span_context())
        await conn.execute("select 1")

    drain(db_url, router)
    handled = spans.one("process sw")
    assert handled.kind == SpanKind.CONSUMER
    assert handled.parent is None
    assert [link.context.span_id for link in handled.links] == [
        receipts[i].context.span_id for i in event_ids
    ]
    assert handled.attributes is not None
    assert handled.attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.id" not in handled.attributes
    assert handled.attributes["messaging.pg_inbox.outcome"] == "processed"
    assert [context.span_id for context in seen] == [handled.context.span_id]


def test_each_retry_is_a_span_of_its_own_linked_to_the_receipt(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    event_id = post(receiver, settings)["event_id"]
    receipt = spans.one("receive sw")
    runs: list[Any] = []
    router = Router()

    @router.on("sw", "*")
    def handle(event: Event, conn: psycopg.Connection[Any]) -> None:
        # A sync handler: its thread sees the span too.
        runs.append(trace.get_current_span().get_span_context())
        if len(runs) == 1:
            raise RuntimeError("the downstream service is down")
        if len(runs) == 2:
            raise Retry(after=0, reason="not yet")
        conn.execute("select 1")

    drain(db_url, router)
    failed, retried, processed = sorted(
        spans.named("process sw"), key=lambda span: span.start_time or 0
    )
    for span in (failed, retried, processed):
        assert_linked_to(span, receipt)
        assert span.attributes is not None
        assert span.attributes["messaging.message.id"] == str(event_id)
    assert [context.span_id for context in runs] == [
        failed.context.span_id,
        retried.context.span_id,
        processed.context.span_id,
    ]
    assert len({span.context.trace_id for span in (failed, retried, processed)}) == 3

    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None
    assert failed.attributes["error.type"] == "RuntimeError"
    assert failed.attributes["messaging.pg_inbox.attempt"] == 1
    [exception] = failed.events
    assert exception.name == "exception"
    assert exception.attributes is not None
    assert exception.attributes["exception.message"] == "the downstream service is down"

    # A Retry is a request, not an error; the attempt count does not grow for it.
    assert retried.status.status_code == StatusCode.UNSET
    assert retried.attributes is not None
    assert retried.attributes["messaging.pg_inbox.outcome"] == "retry"
    assert retried.attributes["messaging.pg_inbox.attempt"] == 2
    assert [(e.name, dict(e.attributes or {})) for e in retried.events] == [
        ("retry_requested", {"after_seconds": 0.0, "reason": "not yet"})
    ]
    assert processed.attributes is not None
    assert processed.attributes["messaging.pg_inbox.attempt"] == 2
    assert processed.status.status_code == StatusCode.UNSET


def test_a_replay_is_a_span_of_its_own_linked_to_the_receipt(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    event_id = post(receiver, settings)["event_id"]
    receipt = spans.one("receive sw")
    router = Router()

    @router.on("sw", "*")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("select 1")

    drain(db_url, router)
    run = queries.replay(db_url, reason="the handler was fixed", ids=[event_id])
    drain(db_url, router)
    first, replayed = sorted(spans.named("process sw"), key=lambda span: span.start_time or 0)
    assert_linked_to(first, receipt)
    assert_linked_to(replayed, receipt)
    assert replayed.attributes is not None
    assert replayed.attributes["messaging.pg_inbox.replay"] is True
    assert replayed.attributes["messaging.pg_inbox.replay_id"] == run.replay_id
    assert first.context.trace_id != replayed.context.trace_id


def test_an_incoming_traceparent_is_continued(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    incoming = f"00-{INCOMING_TRACE}-{INCOMING_SPAN}-01"
    event_id = post(receiver, settings, extra={"traceparent": incoming})["event_id"]
    receipt = spans.one("receive sw")
    assert f"{receipt.context.trace_id:032x}" == INCOMING_TRACE
    assert receipt.parent is not None
    assert f"{receipt.parent.span_id:016x}" == INCOMING_SPAN
    assert receipt.parent.is_remote
    stored = stored_traceparent(db_url, event_id)
    assert stored == traceparent_of(receipt)
    assert stored.split("-")[1] == INCOMING_TRACE


def test_an_incoming_tracestate_goes_with_its_trace_to_the_handlers_link(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    # W3C Trace Context: a propagator passes tracestate on with traceparent; the vendors'
    # entries in it belong to that trace, so the link back to the receipt carries them.
    incoming = f"00-{INCOMING_TRACE}-{INCOMING_SPAN}-01"
    extra = {"traceparent": incoming, "tracestate": INCOMING_STATE}
    event_id = post(receiver, settings, extra=extra)["event_id"]
    receipt = spans.one("receive sw")
    assert receipt.context.trace_state.to_header() == INCOMING_STATE
    assert stored_traceparent(db_url, event_id) == traceparent_of(receipt)
    assert stored_tracestate(db_url, event_id) == INCOMING_STATE

    router = Router()

    @router.on("sw", "*")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("select 1")

    drain(db_url, router)
    handled = spans.one("process sw")
    assert_linked_to(handled, receipt)
    [link] = handled.links
    assert link.context.trace_state.to_header() == INCOMING_STATE
    # The handler's own trace is a new one: the receipt's vendors' state is not its own.
    assert not handled.context.trace_state


@pytest.mark.parametrize(
    ("traceparent", "tracestate", "continued"),
    [
        (f"00-{INCOMING_TRACE}-{INCOMING_SPAN}-01", "not a tracestate", True),
        (f"00-{INCOMING_TRACE}-{INCOMING_SPAN}-01", "rojo=1,rojo=2", True),  # a key twice
        (None, INCOMING_STATE, False),  # a state of no trace
        ("not a traceparent", INCOMING_STATE, False),
    ],
    ids=["malformed", "duplicate-key", "no-traceparent", "bad-traceparent"],
)
def test_a_tracestate_that_means_nothing_is_dropped_and_the_delivery_accepted(
    spans: Spans,
    settings: Settings,
    receiver: str,
    db_url: str,
    traceparent: str | None,
    tracestate: str,
    continued: bool,
) -> None:
    extra = {"tracestate": tracestate}
    if traceparent is not None:
        extra["traceparent"] = traceparent
    reply = post(receiver, settings, extra=extra)
    assert reply["status"] == "accepted"
    receipt = spans.one("receive sw")
    assert (f"{receipt.context.trace_id:032x}" == INCOMING_TRACE) is continued
    assert not receipt.context.trace_state
    assert stored_traceparent(db_url, reply["event_id"]) == traceparent_of(receipt)
    assert stored_tracestate(db_url, reply["event_id"]) is None


@pytest.mark.parametrize(
    "malformed",
    [
        "not a traceparent",
        f"00-{'0' * 32}-{INCOMING_SPAN}-01",  # the all-zero trace id is invalid
        f"00-{INCOMING_TRACE}-{INCOMING_SPAN}",  # no flags
        f"00-{INCOMING_TRACE.upper()}-{INCOMING_SPAN}-01",  # upper case is not allowed
        "\u00e9" * 60,  # not even ASCII
    ],
    ids=["text", "zero-trace-id", "no-flags", "upper-case", "non-ascii"],
)
def test_a_malformed_traceparent_is_ignored_and_the_delivery_accepted(
    spans: Spans, settings: Settings, receiver: str, db_url: str, malformed: str
) -> None:
    reply = post(receiver, settings, extra={"traceparent": malformed.encode()})
    assert reply["status"] == "accepted"
    receipt = spans.one("receive sw")
    assert receipt.parent is None  # a new trace
    assert f"{receipt.context.trace_id:032x}" != INCOMING_TRACE
    assert stored_traceparent(db_url, reply["event_id"]) == traceparent_of(receipt)


def test_a_rejected_request_is_a_receipt_span_with_its_outcome_and_stores_nothing(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    request = signed_request(settings, "sw")
    response = httpx.post(
        f"{receiver}{request.path}",
        content=request.body + b" ",  # the signature no longer matches
        headers=request.headers,
        timeout=10,
    )
    assert response.status_code == 401
    receipt = spans.one("receive sw")
    assert receipt.attributes is not None
    assert receipt.attributes["http.response.status_code"] == 401
    assert receipt.attributes["messaging.pg_inbox.outcome"] == "unauthorized"
    assert "messaging.message.id" not in receipt.attributes
    assert receipt.status.status_code == StatusCode.UNSET  # a refusal is no failure
    # An unknown source's name is the sender's choice: it never becomes a span name.
    httpx.post(f"{receiver}/webhooks/whatever-you-like", content=b"{}", timeout=10)
    assert spans.named("receive (unknown)")
    assert scalar(db_url, "select count(*) from inbox_events") == 0


def test_inside_the_hosts_span_the_receipt_is_its_child(
    spans: Spans, settings: Settings, db_url: str
) -> None:
    """A host whose web instrumentation already traces the request (it read the
    traceparent itself) gets the receipt as a child of its span."""
    request = signed_request(settings, "sw")
    incoming = f"00-{INCOMING_TRACE}-{INCOMING_SPAN}-01"
    request = replace(request, headers={**request.headers, "traceparent": incoming})
    with trace.get_tracer("a host").start_as_current_span("POST /webhooks/sw") as host:
        reply = deliver(settings, request)
    assert reply.status == 200
    receipt = spans.one("receive sw")
    assert receipt.parent is not None
    assert receipt.parent.span_id == host.get_span_context().span_id
    assert receipt.context.trace_id == host.get_span_context().trace_id
    assert stored_traceparent(db_url, reply.event_id or 0) == traceparent_of(receipt)


def test_a_handlers_database_calls_are_children_of_its_span_when_the_host_instruments_psycopg(
    spans: Spans, settings: Settings, receiver: str, db_url: str
) -> None:
    # A host that instruments psycopg (opentelemetry-instrumentation-psycopg) sees what its
    # handler did on the claim's connection inside the handler's span.
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    post(receiver, settings)
    router = Router()

    @router.on("sw", "*")
    async def handle(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("select 1 as from_the_handler")

    instrumentor = PsycopgInstrumentor()
    instrumentor.instrument(skip_dep_check=True)
    try:
        drain(db_url, router)
    finally:
        instrumentor.uninstrument()
    handled = spans.one("process sw")
    children = [
        span
        for span in spans.all()
        if span.parent is not None and span.parent.span_id == handled.context.span_id
    ]
    statements = [(span.attributes or {}).get("db.statement") for span in children]
    assert statements == ["select 1 as from_the_handler"], statements
    assert all(span.kind == SpanKind.CLIENT for span in children)
    assert all(span.context.trace_id == handled.context.trace_id for span in children)
