"""A pipelined batch's statements are held in the kernel (Linux's TCP_CORK) so that they
leave together, and let go before anything waits for the server: the pass's sync, or a
handler's own fetch. These tests read the socket's cork state from inside the handlers,
over TCP and over a Unix socket (where there is no cork), through a proxy so that the
transport is the test's choice whatever server the suite runs on.
"""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from processors import Event, Router
from processors._cork import Cork
from tests._proxy import CommitCutter, PostgresProxy
from tests._wait import scalar
from tests.processors._support import (
    all_attempted,
    attempt_outcomes,
    create_business_table,
    paid_ids,
    run_worker_until,
    write_events,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_CORK is Linux's")

EVENTS = 12
READER = 5  # the n of the event whose handler reads a result back


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # psycopg's async side runs on asyncio


def _corked(conn: psycopg.AsyncConnection[Any]) -> bool:
    sock = socket.socket(fileno=conn.pgconn.socket)
    try:
        if sock.family == socket.AF_UNIX:
            return False
        return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK))
    finally:
        sock.detach()


@pytest.fixture(params=["tcp", "unix"])
def transport(request: pytest.FixtureRequest, worker_url: str) -> Iterator[tuple[str, str]]:
    """(the transport, a connection string to the worker's database over it)."""
    # Short: a Unix socket's path has a limit of about 100 bytes.
    folder = Path(tempfile.mkdtemp(prefix="inbox-", dir="/tmp"))
    proxy = PostgresProxy(
        worker_url,
        CommitCutter(after=b"\x00never\x00", forward_commit=True),
        unix_dir=folder if request.param == "unix" else None,
    )
    try:
        yield request.param, proxy.conninfo()
    finally:
        proxy.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("instrumented", [False, True], ids=["plain", "instrumented"])
def test_a_batch_is_corked_until_a_handler_reads_and_every_effect_commits_once(
    db_url: str, transport: tuple[str, str], instrumented: bool
) -> None:
    # "instrumented": a host traces psycopg with OpenTelemetry's instrumentor, which
    # replaces AsyncConnection.connect and sets its own cursor factory.
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    kind, url = transport
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    seen: dict[int, tuple[bool, bool]] = {}  # n: (corked as it began, corked as it ended)
    router = Router()

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        n = event.json()["n"]
        began = _corked(conn)
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])
        if n == READER:
            # Its own result, and the INSERTs queued before it: nothing may stay in the
            # kernel while psycopg waits for them.
            cursor = await conn.execute("select count(*) from payments")
            assert await cursor.fetchone() == (n + 1,)
        seen[n] = (began, _corked(conn))

    instrumentor = PsycopgInstrumentor()
    if instrumented:
        instrumentor.instrument(skip_dep_check=True)
    try:
        run_worker_until(url, router, all_attempted(db_url, EVENTS))
    finally:
        if instrumented:
            instrumentor.uninstrument()

    assert paid_ids(db_url) == ids
    assert all(outcomes == [("processed", None)] for outcomes in attempt_outcomes(db_url).values())
    if kind == "tcp":
        # Corked from the pass's first handler until the reader's fetch, and left uncorked
        # for the rest of the pass.
        assert seen == {n: (n <= READER, n < READER) for n in range(EVENTS)}
    else:
        assert seen == dict.fromkeys(range(EVENTS), (False, False))
    assert scalar(db_url, "select count(distinct event_id) from payments") == EVENTS


@pytest.mark.anyio
async def test_cork_and_uncork_around_a_pipeline(transport: tuple[str, str]) -> None:
    kind, url = transport
    conn = await psycopg.AsyncConnection.connect(url)
    cork = Cork(conn)
    try:
        # Begun first, as the claim begins the worker's transaction: psycopg's BEGIN in a
        # pipeline waits for its result, which would uncork at once.
        await conn.execute("select 0")
        async with conn.pipeline():
            cork.cork()
            assert _corked(conn) == (kind == "tcp")
            cursor = await conn.execute("select 1")
            queued = await conn.execute("select 2")
            assert _corked(conn) == (kind == "tcp")
            # A fetch waits for the server: the cork goes first.
            assert await cursor.fetchone() == (1,)
            assert not _corked(conn)
            assert not cork.corked
            assert "wait" not in vars(conn)  # the hook goes with the cork
            assert await queued.fetchone() == (2,)
            cork.cork()
            cork.uncork()
            assert not _corked(conn)
            cork.cork()
        # Leaving the pipeline syncs, which waits for the server.
        assert not _corked(conn)
        assert not cork.corked
        await conn.commit()
        async with conn.pipeline():
            cork.cork()
            # psycopg's own wait: the BEGIN of a new transaction waits for its result.
            cursor = await conn.execute("select 3")
            assert not _corked(conn)
            assert await cursor.fetchone() == (3,)
    finally:
        await conn.close()
