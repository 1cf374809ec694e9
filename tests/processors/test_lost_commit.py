"""A connection lost during COMMIT: the outcome is learnt by re-reading, never by re-running."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from structlog.testing import capture_logs

from processors import Event, Router
from tests._proxy import CommitCutter, PostgresProxy
from tests._wait import scalar
from tests.processors._support import create_business_table, run_worker_until, write_events

# A commit that takes the server a while (here a deferred trigger, elsewhere a slow disk or
# a synchronous standby): the worker, cut off, reconnects and asks while it still runs.
SLOW_COMMIT = """
create function slow_commit() returns trigger language plpgsql as $$
begin
    perform pg_sleep(0.1);
    return null;
end $$;
create constraint trigger slow_commit after insert on payments
    deferrable initially deferred for each row execute function slow_commit();
"""


@pytest.mark.parametrize(
    ("commit_reaches_server", "slow", "committed", "not_committed"),
    [(True, False, 20, 0), (True, True, 20, 0), (False, False, 0, 20)],
    ids=["commit-happened", "commit-happened-slowly", "commit-lost"],
)
def test_lost_commit_is_resolved_by_rereading_and_every_effect_happens_once(
    db_url: str,
    worker_url: str,
    commit_reaches_server: bool,
    slow: bool,
    committed: int,
    not_committed: int,
) -> None:
    create_business_table(db_url)
    if slow:  # 20 rows: the COMMIT runs for 2 s after the client is cut off
        with psycopg.connect(db_url) as conn:
            conn.execute(SLOW_COMMIT)
    write_events(db_url, 20)
    cutter = CommitCutter(after=b"inbox_attempts", forward_commit=commit_reaches_server)
    proxy = PostgresProxy(worker_url, cutter)
    router = Router()

    @router.on("shop")
    async def pay(event: Event, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute("insert into payments (event_id) values (%s)", [event.id])

    try:
        with capture_logs() as logs:

            def resolved_and_settled() -> bool:
                return any(e["event"] == "commit_outcome_resolved" for e in logs) and (
                    scalar(db_url, "select count(*) from inbox_work") == 0
                )

            run_worker_until(
                proxy.conninfo(),
                router,
                resolved_and_settled,
                what="the lost commit resolved and every event settled",
            )
    finally:
        proxy.close()

    assert cutter.cut.is_set()
    resolved = [entry for entry in logs if entry["event"] == "commit_outcome_resolved"]
    assert len(resolved) == 1, logs
    assert (resolved[0]["committed"], resolved[0]["not_committed"]) == (committed, not_committed)
    assert scalar(db_url, "select count(*) from payments") == 20
    assert scalar(db_url, "select count(distinct event_id) from payments") == 20
    assert scalar(db_url, "select count(*) from inbox_attempts where outcome = 'processed'") == 20
