"""``inbox replay --rehearse`` under the least roles: the handlers run as the worker's
role, the selection and the audit row are the operator's, and nothing else is left."""

from __future__ import annotations

import json

import anyio
import psycopg
import pytest
from psycopg import sql

from inbox import InboxWriter
from inbox._operations.rehearsal import rehearsal_request, request_rehearsal
from inbox._operations.selection import EventFilter
from processors._rehearsal.requests import RehearsalRequests
from tests._wait import rows
from tests.operator._support import env_for, inbox
from tests.processors.rehearsal_app import TABLES
from tests.processors.rehearsal_app import router as rehearsal_router
from tests.security.conftest import Roles


def _two_events(db_url: str, roles: Roles) -> list[int]:
    """The rehearsal app's tables, the worker's grants on them, and two events (one of
    which its handler fails on), written by the receiver's role."""
    with psycopg.connect(db_url) as conn:
        conn.execute(TABLES)
        conn.execute(
            sql.SQL(
                "grant select, insert, update, delete on effects, payments, ledger to {}"
            ).format(sql.Identifier(roles.names.of("worker")))
        )
    with InboxWriter(roles.url("receiver")) as writer:
        return [
            writer.write(
                "shop", f"k{n}", f'{{"n": {n}}}'.encode(), event_type="order.paid"
            ).event_id
            for n in (2, 3)
        ]


def test_a_rehearsal_runs_as_the_worker_and_is_recorded_by_the_operator(
    db_url: str, roles: Roles
) -> None:
    ids = _two_events(db_url, roles)
    with psycopg.connect(db_url) as conn:
        before = [conn.execute(f"select * from {t}").fetchall() for t in ("effects", "ledger")]
    env = env_for(
        db_url,
        INBOX_DATABASE__URL=roles.url("operator"),
        INBOX_DATABASE__WORKER_URL=roles.url("worker"),
    )
    result = inbox(
        db_url,
        "replay",
        "--all",
        "--rehearse",
        "--app",
        "tests.processors.rehearsal_app:router",
        "--json",
        env=env,
    )
    assert result.returncode == 1, result.stderr
    out = json.loads(result.stdout)
    assert out["counts"] == {"succeeded": 1, "failed": 1, "retry": 0, "skipped": 0}
    with psycopg.connect(db_url) as conn:
        after = [conn.execute(f"select * from {t}").fetchall() for t in ("effects", "ledger")]
    assert after == before
    assert rows(db_url, "select kind, selected, login from inbox_replays") == [
        ("rehearsal", len(ids), roles.login("operator"))
    ]


def test_a_requested_rehearsal_is_asked_by_the_operator_and_run_by_the_worker(
    db_url: str, roles: Roles
) -> None:
    """The console's path: the operator's function writes the audit row and the request;
    the worker's role takes it, counts it and leaves the report, and may change nothing
    else of it."""
    ids = _two_events(db_url, roles)
    with psycopg.connect(roles.url("operator")) as conn:
        request_id = request_rehearsal(
            conn,
            selection=EventFilter(source="shop"),
            event_ids=ids,
            form={"query": {"source": "shop"}, "ids": None},
            timeout_seconds=60,
            actor="olga",
            via="console",
        )
    requests = RehearsalRequests(roles.url("worker"), rehearsal_router, "w:1", timeout_seconds=5)
    assert anyio.run(requests.run_one)
    with psycopg.connect(roles.url("operator")) as conn:
        done = rehearsal_request(conn, request_id)
    assert done.state == "done"
    assert done.report is not None
    assert done.report["counts"] == {"succeeded": 1, "failed": 1, "retry": 0, "skipped": 0}
    assert rows(db_url, "select kind, created_by, login from inbox_replays") == [
        ("rehearsal", "olga", roles.login("operator"))
    ]
    for part, change in (("worker", "event_ids = '{1}'"), ("operator", "state = 'done'")):
        with (
            psycopg.connect(roles.url(part)) as conn,
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            conn.execute(f"update inbox_rehearsal_requests set {change}")
