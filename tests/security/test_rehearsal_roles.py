"""``inbox replay --rehearse`` under the least roles: the handlers run as the worker's
role, the selection and the audit row are the operator's, and nothing else is left."""

from __future__ import annotations

import json

import psycopg
from psycopg import sql

from inbox import InboxWriter
from tests._wait import rows
from tests.operator._support import env_for, inbox
from tests.processors.rehearsal_app import TABLES
from tests.security.conftest import Roles


def test_a_rehearsal_runs_as_the_worker_and_is_recorded_by_the_operator(
    db_url: str, roles: Roles
) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute(TABLES)
        conn.execute(
            sql.SQL(
                "grant select, insert, update, delete on effects, payments, ledger to {}"
            ).format(sql.Identifier(roles.names.of("worker")))
        )
    with InboxWriter(roles.url("receiver")) as writer:
        ids = [
            writer.write(
                "shop", f"k{n}", f'{{"n": {n}}}'.encode(), event_type="order.paid"
            ).event_id
            for n in (2, 3)
        ]
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
