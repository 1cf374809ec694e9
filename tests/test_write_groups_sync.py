"""Group commit in InboxWriter: many threads' writes share statements, each still gets its
own result or its own error, and the writer is safe across close() and fork()."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable

import psycopg
import pytest

from inbox import DatabaseUnavailableError, InboxError, InboxWriter, WriteResult
from tests._proxy import CommitCutter, PostgresProxy
from tests._wait import rows, scalar, wait_for

Outcome = WriteResult | BaseException


def _in_threads(writes: list[Callable[[], WriteResult]]) -> list[Outcome]:
    """Run each write in a thread of its own, all let go at once."""
    outcomes: list[Outcome | None] = [None] * len(writes)
    start = threading.Barrier(len(writes))

    def run(n: int) -> None:
        start.wait()
        try:
            outcomes[n] = writes[n]()
        except BaseException as exc:  # noqa: BLE001 - the test looks at each outcome
            outcomes[n] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(writes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a write never returned"
    return [o for o in outcomes if o is not None]


def test_threads_writes_share_commits_and_each_gets_its_own_event(db_url: str) -> None:
    with InboxWriter(db_url, min_size=4, max_size=4) as writer:

        def many(thread: int) -> Callable[[], WriteResult]:
            def run() -> WriteResult:
                last = None
                for n in range(20):
                    last = writer.write("shop", f"t{thread}-{n}", b"{}")
                    assert last.is_new
                # And a key every thread sends: one event, the rest duplicates.
                shared = writer.write("shop", "shared", b"{}")
                assert last is not None
                return shared

            return run

        outcomes = _in_threads([many(t) for t in range(16)])
    shared = [o for o in outcomes if isinstance(o, WriteResult)]
    assert len(shared) == 16, outcomes
    assert sum(o.is_new for o in shared) == 1
    assert len({o.event_id for o in shared}) == 1
    assert scalar(db_url, "select count(*) from inbox_events") == 16 * 20 + 1
    assert scalar(db_url, "select count(*) from inbox_work") == 16 * 20 + 1
    assert scalar(db_url, "select count(*) from inbox_deliveries") == 15
    # Rows written by one transaction share its xmin: fewer transactions than writes.
    assert scalar(db_url, "select count(distinct xmin::text) from inbox_events") < 16 * 20


def test_a_write_the_database_refuses_fails_only_its_caller(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute("""
            create function refuse_poison() returns trigger language plpgsql as $$
            begin
                if new.idempotency_key = 'poison' then
                    raise exception 'poison refused';
                end if;
                return new;
            end $$;
            create trigger refuse_poison before insert on inbox_keys
                for each row execute function refuse_poison();
        """)
    with InboxWriter(db_url, min_size=2, max_size=2) as writer:
        keys = [f"k{n}" for n in range(23)] + ["poison"]
        outcomes = _in_threads(
            [lambda key=key: writer.write("shop", key, b"{}") for key in keys]  # type: ignore[misc]
        )
    by_key = dict(zip(keys, outcomes, strict=True))
    assert isinstance(by_key.pop("poison"), psycopg.errors.RaiseException)
    assert all(isinstance(o, WriteResult) and o.is_new for o in by_key.values()), by_key
    assert scalar(db_url, "select count(*) from inbox_events") == 23


@pytest.mark.parametrize("commit_reaches_server", [True, False], ids=["committed", "lost"])
def test_a_connection_lost_mid_group_fails_each_of_its_writes_and_acknowledges_nothing(
    db_url: str, commit_reaches_server: bool
) -> None:
    cutter = CommitCutter(
        after=b"inbox_write_events(", forward_commit=commit_reaches_server, cut_at_after=True
    )
    proxy = PostgresProxy(db_url, cutter)
    try:
        with InboxWriter(proxy.conninfo(), min_size=2, max_size=2, timeout_seconds=5) as writer:
            keys = [f"k{n}" for n in range(24)]
            outcomes = _in_threads(
                [lambda key=key: writer.write("shop", key, b"{}") for key in keys]  # type: ignore[misc]
            )
    finally:
        proxy.close()
    assert cutter.cut.is_set(), "no group statement was sent"
    acknowledged = {k for k, o in zip(keys, outcomes, strict=True) if isinstance(o, WriteResult)}
    for key, outcome in zip(keys, outcomes, strict=True):
        assert isinstance(outcome, WriteResult | DatabaseUnavailableError), (key, outcome)
    wait_for(
        lambda: (
            scalar(
                db_url,
                "select count(*) from pg_stat_activity where datname = current_database()"
                " and pid <> pg_backend_pid() and state <> 'idle'",
            )
            == 0
        ),
        timeout=30,
        what="the cut connection's backend to finish",
    )
    stored = {str(r[0]) for r in rows(db_url, "select idempotency_key from inbox_events")}
    # Every acknowledged write is stored; the cut group is all or nothing, as the server
    # decided, and none of its callers was told it succeeded.
    assert acknowledged <= stored
    failed = set(keys) - acknowledged
    assert failed
    assert (failed <= stored) if commit_reaches_server else not (failed & stored)


def _backends(writer: InboxWriter) -> set[int]:
    with writer._pool.connection() as conn:
        return {int(conn.info.backend_pid)}


def test_a_child_process_writes_on_connections_of_its_own(db_url: str) -> None:
    with InboxWriter(db_url, min_size=1, max_size=1) as writer:
        assert writer.write("shop", "before-fork", b"{}").is_new
        parents = _backends(writer)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: write, report, and leave without running anything else
            code = 1
            try:
                results = [writer.write("shop", f"child-{n}", b"{}").is_new for n in range(20)]
                report = {"new": sum(results), "backends": sorted(_backends(writer))}
                os.write(write, json.dumps(report).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        # Meanwhile the parent writes on its own pool, whose session the child never used.
        mine = [writer.write("shop", f"parent-{n}", b"{}").is_new for n in range(20)]
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read) as pipe:
            child = json.loads(pipe.read() or "{}")
        assert os.waitstatus_to_exitcode(status) == 0, child
        assert child["new"] == 20
        assert not (set(child["backends"]) & parents)
        assert all(mine)
        assert _backends(writer) == parents
    assert scalar(db_url, "select count(*) from inbox_events") == 41


def test_close_finishes_the_writes_in_flight_and_later_writes_are_refused(db_url: str) -> None:
    before = threading.active_count()
    writer = InboxWriter(db_url, min_size=2, max_size=2)
    stop = threading.Event()
    outcomes: list[Outcome] = []

    def keep_writing(thread: int) -> None:
        n = 0
        while not stop.is_set():
            try:
                outcomes.append(writer.write("shop", f"t{thread}-{n}", b"{}"))
            except BaseException as exc:  # noqa: BLE001 - looked at below
                outcomes.append(exc)
                return
            n += 1

    threads = [threading.Thread(target=keep_writing, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    wait_for(lambda: len(outcomes) >= 50, timeout=30, what="writes under way")
    writer.close()
    stop.set()
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    written = [o for o in outcomes if isinstance(o, WriteResult)]
    refused = [o for o in outcomes if not isinstance(o, WriteResult)]
    assert all(isinstance(o, InboxError) and "closed" in str(o) for o in refused), refused
    assert scalar(db_url, "select count(*) from inbox_events") == len(written)
    with pytest.raises(InboxError, match="closed"):
        writer.write("shop", "after", b"{}")
    wait_for(
        lambda: threading.active_count() <= before, timeout=10, what="the pool's threads to end"
    )
