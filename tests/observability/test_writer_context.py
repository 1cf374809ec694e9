"""The writers embedded in a host store the host's current span with each new event, and
nothing when the host traces nothing; without an SDK (or without the API) pg-inbox neither
imports OpenTelemetry nor stores anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import psycopg
import pytest
from opentelemetry import trace

from inbox import AsyncInboxWriter, InboxWriter
from tests._commands import environment, run_python
from tests._spans import Spans, in_vendors_trace, traceparent_of
from tests._wait import scalar

REPO = Path(__file__).resolve().parents[2]
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def stored(db_url: str, event_id: int) -> str | None:
    value = scalar(db_url, "select traceparent from inbox_events where id = %s", [event_id])
    return None if value is None else str(value)


def stored_state(db_url: str, event_id: int) -> str | None:
    value = scalar(db_url, "select tracestate from inbox_events where id = %s", [event_id])
    return None if value is None else str(value)


def test_the_sync_writer_stores_the_hosts_current_span(spans: Spans, db_url: str) -> None:
    tracer = trace.get_tracer("a host")
    with InboxWriter(db_url) as writer:
        with tracer.start_as_current_span("checkout") as span:
            traced = writer.write("shop", "k1", b"{}").event_id
        untraced = writer.write("shop", "k2", b"{}").event_id
        with psycopg.connect(db_url) as conn, tracer.start_as_current_span("txn") as in_txn:
            joined = writer.write("shop", "k3", b"{}", conn=conn).event_id
    assert stored(db_url, traced) == traceparent_of(span)
    assert stored(db_url, untraced) is None
    assert stored(db_url, joined) == traceparent_of(in_txn)


def test_the_writers_store_the_hosts_tracestate_with_its_traceparent(
    spans: Spans, db_url: str
) -> None:
    tracer = trace.get_tracer("a host")
    context = in_vendors_trace(("congo", "t61rcWkgMzE"), ("rojo", "00f067aa0ba902b7"))

    async def write_async() -> tuple[int, str]:
        async with AsyncInboxWriter(db_url) as writer:
            with tracer.start_as_current_span("async checkout", context=context) as span:
                return (await writer.write("shop", "async", b"{}")).event_id, traceparent_of(span)

    with (
        InboxWriter(db_url) as writer,
        tracer.start_as_current_span("checkout", context=context) as span,
    ):
        written = [(writer.write("shop", "sync", b"{}").event_id, traceparent_of(span))]
    written.append(anyio.run(write_async))
    for event_id, traceparent in written:
        assert stored(db_url, event_id) == traceparent
        assert stored_state(db_url, event_id) == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"


def test_a_tracestate_longer_than_w3c_asks_to_pass_on_is_cut_as_it_says(
    spans: Spans, db_url: str
) -> None:
    # 200 characters: over 128, so the first to go; then 15 entries of 43, and entries go
    # from the end until the rest fits in 512: 11 of them (483 characters).
    long = ("big", "x" * 196)
    short = [(f"k{n:02}", "v" * 39) for n in range(15)]
    with (
        InboxWriter(db_url) as writer,
        trace.get_tracer("a host").start_as_current_span(
            "checkout", context=in_vendors_trace(long, *short)
        ),
    ):
        event_id = writer.write("shop", "k1", b"{}").event_id
    kept = ",".join(f"{key}={value}" for key, value in short[:11])
    assert len(kept) == 483
    assert stored_state(db_url, event_id) == kept


# 9 entries of 64 characters: 584 with their commas; the first 7 fit in 512 (454).
NINE = [f"k{n:03}=" + "v" * 59 for n in range(9)]


@pytest.mark.parametrize(
    ("header", "bounded"),
    [
        (None, None),
        ("", None),
        ("a=1", "a=1"),
        ("a=" + "x" * 510, "a=" + "x" * 510),  # 512: kept whole, long entry or not
        ("a=" + "x" * 511, None),  # one entry, too long: nothing is left
        ("a=1,b=" + "x" * 600 + ",c=3", "a=1,c=3"),  # the long one goes first
        (",".join(NINE), ",".join(NINE[:7])),
    ],
    ids=["none", "empty", "short", "at-the-limit", "one-too-long", "long-entry", "from-the-end"],
)
def test_bounded_tracestate(header: str | None, bounded: str | None) -> None:
    from inbox._core.tracing import TRACESTATE_LIMIT, bounded_tracestate

    assert bounded_tracestate(header) == bounded
    assert len(bounded_tracestate(header) or "") <= TRACESTATE_LIMIT


def test_the_async_writer_stores_each_writes_own_span_in_a_group(spans: Spans, db_url: str) -> None:
    tracer = trace.get_tracer("a host")
    written: dict[str, tuple[int, str]] = {}

    async def one(key: str, writer: AsyncInboxWriter) -> None:
        with tracer.start_as_current_span(f"request {key}") as span:
            result = await writer.write("shop", key, b"{}")
        written[key] = (result.event_id, traceparent_of(span))

    async def main() -> None:
        # Concurrent standalone writes share group statements: each keeps its own span.
        async with AsyncInboxWriter(db_url) as writer, anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(one, f"k{n}", writer)

    anyio.run(main)
    assert len(written) == 20
    for event_id, traceparent in written.values():
        assert stored(db_url, event_id) == traceparent


def _child(code: str, db_url: str, *blocked: str) -> subprocess.CompletedProcess[str]:
    block = "".join(f"sys.modules[{name!r}] = None; " for name in blocked)
    env = environment(without=("INBOX_", "OTEL_"), DB=db_url)
    return run_python("-c", f"import sys; {block}{code}", env=env)


WRITE = (
    "import os; from inbox import InboxWriter; "
    "w = InboxWriter(os.environ['DB']); r = w.write('shop', {key!r}, b'{{}}'); w.close(); "
)


def test_without_an_sdk_nothing_is_imported_or_stored(db_url: str) -> None:
    done = _child(
        WRITE.format(key="plain")
        + "assert not any(m.startswith('opentelemetry') for m in sys.modules), sorted(sys.modules)",
        db_url,
    )
    assert done.returncode == 0, done.stderr
    # The API loaded by the host, but no SDK: the API's placeholder provider exports
    # nothing, so nothing is stored either.
    done = _child(
        "from opentelemetry import trace; "
        "span_cm = trace.get_tracer('host').start_as_current_span('x'); span_cm.__enter__(); "
        + WRITE.format(key="api-only"),
        db_url,
    )
    assert done.returncode == 0, done.stderr
    assert scalar(db_url, "select count(*) from inbox_events") == 2
    assert scalar(db_url, "select count(*) from inbox_events where traceparent is not null") == 0


def test_without_the_api_installed_the_receiver_still_receives(db_url: str) -> None:
    code = (
        "import os; from inbox import Settings; "
        "from inbox.testing import deliver, signed_request; "
        "s = Settings(database={'url': os.environ['DB']}, sources=[{'name': 'sw', "
        f"'verifier': 'standard-webhooks', 'secrets': [{SECRET!r}]}}]); "
        "reply = deliver(s, signed_request(s, 'sw')); assert reply.status == 200, reply; "
        "assert sys.modules['opentelemetry'] is None"
    )
    done = _child(code, db_url, "opentelemetry", "opentelemetry.trace")
    assert done.returncode == 0, done.stderr
    assert scalar(db_url, "select count(*) from inbox_events where traceparent is null") == 1


def test_an_event_shows_the_trace_of_its_receipt_and_none_when_untraced(
    spans: Spans, db_url: str
) -> None:
    from inbox import queries
    from inbox._cli.operator import render_event

    with InboxWriter(db_url) as writer:
        with trace.get_tracer("a host").start_as_current_span("request") as span:
            traced = writer.write("shop", "k1", b"{}").event_id
        untraced = writer.write("shop", "k2", b"{}").event_id
    trace_id = f"{span.get_span_context().trace_id:032x}"
    shown = queries.event(db_url, traced)
    assert shown.trace_id == trace_id
    assert shown.to_json()["trace_id"] == trace_id
    assert f"trace     {trace_id}" in render_event(shown)
    assert queries.event(db_url, untraced).to_json()["trace_id"] is None
    assert "trace " not in render_event(queries.event(db_url, untraced))


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (None, None),
        (f"00-{TRACE_ID}-00f067aa0ba902b7-01", TRACE_ID),
        ("00-" + "0" * 32 + "-00f067aa0ba902b7-01", None),
        ("garbage", None),
        (f"00-{TRACE_ID.upper()}-00f067aa0ba902b7-01", None),
    ],
)
def test_the_trace_id_of_a_stored_traceparent(stored: str | None, shown: str | None) -> None:
    from inbox._core.tracing import trace_id_of

    assert trace_id_of(stored) == shown
