"""A pipelined batch's statements are sent without a wait on the event loop each, and over TCP
on Linux held in the kernel (TCP_CORK) so that they leave together, let go before anything
waits for the server: the pass's sync, or a handler's own fetch. These tests read the
socket's cork state and count psycopg's own waits from inside the handlers, over TCP and over
a Unix socket (where there is no cork), through a proxy so that the transport is the test's
choice whatever server the suite runs on.
"""

from __future__ import annotations

import asyncio
import fcntl
import shutil
import socket
import sys
import tempfile
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.waiting import Ready, Wait

from processors import Event, Router
from processors._running.pipeline import BatchPipeline
from processors._running.pipeline_send import HOLD_MAX, MAX_BUSY_SECONDS, PipelineSend, _resumed
from tests._proxy import CommitCutter, PausingProxy, PostgresProxy
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


@pytest.fixture
def psycopg_waits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one each time psycopg's own wait (AsyncConnection.wait, which
    asks the kernel and the event loop) takes a generator, whoever calls it."""
    calls: list[int] = []
    own = psycopg.AsyncConnection.wait

    async def counted(self: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await own(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "wait", counted)
    return calls


def _folder() -> Path:
    # Short: a Unix socket's path has a limit of about 100 bytes.
    return Path(tempfile.mkdtemp(prefix="inbox-", dir="/tmp"))


@pytest.fixture(params=["tcp", "unix"])
def transport(request: pytest.FixtureRequest, worker_url: str) -> Iterator[tuple[str, str]]:
    """(the transport, a connection string to the worker's database over it)."""
    folder = _folder()
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
def test_a_batch_is_sent_without_waits_corked_until_a_handler_reads_and_commits_once(
    db_url: str, transport: tuple[str, str], instrumented: bool, psycopg_waits: list[int]
) -> None:
    # "instrumented": a host traces psycopg with OpenTelemetry's instrumentor, which
    # replaces AsyncConnection.connect and sets its own cursor factory.
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    kind, url = transport
    create_business_table(db_url)
    ids = write_events(db_url, EVENTS)
    # n: (corked as it began, corked as it ended, psycopg's waits during its INSERT)
    seen: dict[int, tuple[bool, bool, int]] = {}
    router = Router()

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        n = event.json()["n"]
        began = _corked(conn)
        waits = len(psycopg_waits)
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])
        waits = len(psycopg_waits) - waits
        if n == READER:
            # Its own result, and the INSERTs queued before it: nothing may stay in the
            # kernel while psycopg waits for them.
            cursor = await conn.execute("select count(*) from payments")
            assert await cursor.fetchone() == (n + 1,)
        seen[n] = (began, _corked(conn), waits)

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
    # No INSERT asked psycopg's wait (nor the kernel) whether it could be sent.
    assert [waits for _, _, waits in seen.values()] == [0] * EVENTS
    corked = {n: (began, ended) for n, (began, ended, _) in seen.items()}
    if kind == "tcp":
        # Corked from the pass's first handler until the reader's fetch, and left uncorked
        # for the rest of the pass.
        assert corked == {n: (n <= READER, n < READER) for n in range(EVENTS)}
    else:
        assert corked == dict.fromkeys(range(EVENTS), (False, False))
    assert scalar(db_url, "select count(distinct event_id) from payments") == EVENTS


@pytest.mark.anyio
async def test_start_and_stop_around_a_pipeline(
    transport: tuple[str, str], psycopg_waits: list[int]
) -> None:
    kind, url = transport
    conn = await psycopg.AsyncConnection.connect(url)
    send = PipelineSend(conn)
    try:
        # Begun first, as the claim begins the worker's transaction: psycopg's BEGIN in a
        # pipeline waits for its result, which would uncork at once.
        await conn.execute("select 0")
        async with conn.pipeline():
            send.start()
            assert _corked(conn) == (kind == "tcp")
            waits = len(psycopg_waits)
            cursor = await conn.execute("select 1")
            queued = await conn.execute("select 2")
            assert len(psycopg_waits) == waits  # sent without asking
            assert _corked(conn) == (kind == "tcp")
            # A fetch waits for the server, in psycopg's wait; the cork goes first.
            assert await cursor.fetchone() == (1,)
            assert len(psycopg_waits) > waits
            assert not _corked(conn)
            assert not send.corked
            assert vars(conn)["wait"] == send._wait  # still answering the sends
            assert await queued.fetchone() == (2,)
            send.stop()
            assert "wait" not in vars(conn)
            assert not _corked(conn)
            send.start()
        # Leaving the pipeline syncs, which waits for the server.
        assert not _corked(conn)
        assert not send.corked
        send.stop()
        await conn.commit()
        async with conn.pipeline():
            send.start()
            # psycopg's own wait: the BEGIN of a new transaction waits for its result.
            cursor = await conn.execute("select 3")
            assert not _corked(conn)
            assert await cursor.fetchone() == (3,)
            send.stop()
    finally:
        await conn.close()


@pytest.fixture(params=["tcp", "unix"])
def pausing_proxy(request: pytest.FixtureRequest, worker_url: str) -> Iterator[PausingProxy]:
    folder = _folder()
    proxy = PausingProxy(worker_url, unix_dir=folder if request.param == "unix" else None)
    try:
        yield proxy
    finally:
        proxy.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.anyio
async def test_a_send_the_kernel_cannot_take_waits_for_the_socket_instead_of_spinning(
    pausing_proxy: PausingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server stops reading: the kernel's buffers fill, libpq keeps what they cannot take,
    # and a statement's send is not done however often it is answered. It must go to
    # psycopg's wait, which waits for the socket, and not loop here answering itself.
    waiting = asyncio.Event()
    own = psycopg.AsyncConnection.wait

    async def noted(self: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
        waiting.set()
        return await own(self, *args, **kwargs)

    conn = await psycopg.AsyncConnection.connect(pausing_proxy.conninfo())
    send = PipelineSend(conn)
    big = "x" * 1_000_000
    try:
        await conn.execute("select 0")
        async with conn.pipeline() as pipeline:
            send.start()
            monkeypatch.setattr(psycopg.AsyncConnection, "wait", noted)
            pausing_proxy.pause()

            async def flood() -> list[psycopg.AsyncCursor[Any]]:
                # Until a send is handed to psycopg's wait: however large the kernel's
                # buffers are here, they fill.
                cursors = []
                while not waiting.is_set():
                    cursors.append(await conn.execute("select length(%s)", [big]))
                return cursors

            flooding = asyncio.ensure_future(flood())
            await asyncio.wait_for(waiting.wait(), timeout=60)
            assert not flooding.done()  # blocked on the socket, not spinning on
            pausing_proxy.resume()
            cursors = await asyncio.wait_for(flooding, timeout=60)
            await asyncio.wait_for(pipeline.sync(), timeout=60)
            send.stop()
            assert [await cursor.fetchone() for cursor in cursors] == [(1_000_000,)] * len(cursors)
    finally:
        pausing_proxy.resume()
        await conn.close()


def _unread(conn: psycopg.AsyncConnection[Any]) -> int:
    """Bytes the connection's socket holds that its peer has not taken (SIOCOUTQ)."""
    out = bytearray(4)
    fcntl.ioctl(conn.pgconn.socket, termios.TIOCOUTQ, out)
    return int.from_bytes(out, sys.byteorder)


@pytest.mark.anyio
async def test_statements_stay_in_the_worker_until_the_pass_needs_them_sent(
    pausing_proxy: PausingProxy,
) -> None:
    # The proxy reads nothing meanwhile, so whatever the worker writes stays in the socket
    # (corked over TCP, unread over a Unix socket) where it can be counted.
    conn = await psycopg.AsyncConnection.connect(pausing_proxy.conninfo())
    send = PipelineSend(conn)
    try:
        await conn.execute("select 0")
        async with conn.pipeline() as pipeline:
            send.start()
            pausing_proxy.pause()
            # Not prepared, so that each is one command (psycopg would queue a PREPARE
            # besides the fifth).
            held = [
                await conn.execute("select %s::int", [n], prepare=False)
                for n in range(HOLD_MAX - 1)
            ]
            unread_held = _unread(conn)
            # The HOLD_MAX-th goes with them, in one write.
            held.append(await conn.execute("select %s::int", [HOLD_MAX - 1], prepare=False))
            unread_sent = _unread(conn)
            # Read before any assertion: a failure that left the proxy paused would hang
            # in the pipeline's exit.
            pausing_proxy.resume()
            assert unread_held == 0
            assert unread_sent > 0
            second = [await conn.execute("select %s::int", [n]) for n in range(3)]
            # A fetch sends what is held before it asks for results.
            assert await second[2].fetchone() == (2,)
            assert [(await c.fetchone()) for c in held + second[:2]] == [
                (n,) for n in range(HOLD_MAX)
            ] + [(0,), (1,)]
            pausing_proxy.pause()
            last = await conn.execute("select 'last'")
            unread_held = _unread(conn)
            pausing_proxy.resume()
            assert unread_held == 0
            await pipeline.sync()  # sends it
            assert await last.fetchone() == ("last",)
            # Held when the hook comes off: psycopg's own queue has it, and leaving sends it.
            after = await conn.execute("select 'after'")
            send.stop()
        assert await after.fetchone() == ("after",)
    finally:
        pausing_proxy.resume()
        await conn.close()


@pytest.mark.anyio
async def test_the_event_loop_gets_its_turns_while_statements_are_sent(worker_url: str) -> None:
    # Statements that never wait for the socket would otherwise keep the loop (the other
    # claim loops, the listener, a handler's time limit) from running for a whole batch.
    turns = 0
    stop = asyncio.Event()

    async def count_turns() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            await asyncio.sleep(0)

    conn = await psycopg.AsyncConnection.connect(worker_url)
    send = PipelineSend(conn)
    try:
        await conn.execute("select 0")
        async with conn.pipeline():
            send.start()
            counting = asyncio.ensure_future(count_turns())
            started = asyncio.get_running_loop().time()
            sent = 0
            # Long enough that the loop is owed several turns.
            while asyncio.get_running_loop().time() - started < 20 * MAX_BUSY_SECONDS:
                await conn.execute("select %s", [sent])
                sent += 1
            counted = turns
            send.stop()
        stop.set()
        await counting
        assert counted >= 2, f"{sent} statements in a row gave the loop {counted} turns"
    finally:
        await conn.close()


def test_a_send_before_a_read_goes_on_when_psycopg_starts_it_again() -> None:
    # After a cancel, psycopg's wait starts the same generator again (``next``, so a None
    # where a readiness is awaited): a wait to read that is still sending what libpq holds
    # must go on sending, not fail, which would close the connection. libpq's side is
    # played by a stand-in here: on a real server, the moment a sync's deadline lands
    # while the server has stopped reading mid-statement depends on the socket's buffers.
    class Libpq:
        unsent = 3
        consumed = 0

        def flush(self) -> int:
            return 1 if self.unsent else 0

        def consume_input(self) -> None:
            self.consumed += 1

    def fetch() -> Iterator[Any]:
        ready = yield Wait.R
        return ready

    libpq = Libpq()
    gen = fetch()
    sending = _resumed(gen, next(gen), libpq)  # type: ignore[arg-type]
    assert next(sending) == Wait.RW  # sending first
    assert next(sending) == Wait.RW  # started again after a cancel: still sending
    assert sending.send(Ready.R) == Wait.RW  # what the server sent meanwhile is read
    assert libpq.consumed == 1
    libpq.unsent = 0
    with pytest.raises(StopIteration) as done:
        sending.send(Ready.W)
    # The read goes on from what libpq has read already.
    assert done.value.value == Ready.R


@pytest.mark.anyio
async def test_a_sync_cancelled_from_outside_leaves_no_hook(db_url: str) -> None:
    # A worker's shutdown cancels whatever it awaits, a batch's closing sync included.
    conn = await psycopg.AsyncConnection.connect(db_url)
    try:
        pipe = BatchPipeline(conn)
        await pipe.open(30.0)
        await conn.execute("select pg_sleep(1)")
        closing = asyncio.ensure_future(pipe.close())
        await asyncio.sleep(0)  # (a turn, so that the sync is under way; not a wait for time)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert "wait" not in conn.__dict__
    finally:
        await conn.close()


def test_the_hooks_fit_the_libraries_ci_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    # A psycopg or pydantic that no longer fits fails here, not silently slower in production
    # (processors/_compat.py; tests/processors/test_compat.py runs the worker without them).
    from processors import _compat

    monkeypatch.delenv(_compat.HOOKS_ENV, raising=False)
    assert _compat._decide() == _compat.Hooks(True, True, True, ())
