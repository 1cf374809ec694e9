"""The example handlers `inbox dev` runs are safe under replay: a replayed payment is
recomputed, never recorded twice (and never a unique violation)."""

from __future__ import annotations

import json

from inbox import InboxWriter
from inbox._cli.dev.env import apply_sql, examples_schema
from inbox.queries import replay
from processors.examples.handlers import router
from processors.testing import run_pending
from tests._wait import scalar


def test_a_replayed_payment_is_recomputed_not_duplicated(db_url: str, worker_url: str) -> None:
    apply_sql(db_url, [examples_schema()])
    body = {
        "id": "evt_1",
        "type": "invoice.paid",
        "data": {"object": {"amount_paid": 500, "currency": "eur"}},
    }
    with InboxWriter(db_url) as writer:
        event = writer.write(
            source="stripe", key="evt_1", body=json.dumps(body).encode(), event_type="invoice.paid"
        )
        writer.write(source="github", key="d-1", body=b"{}", event_type="push")
    run_pending(worker_url, router)
    assert scalar(db_url, "select count(*) from payments") == 1
    assert scalar(db_url, "select amount from payments") == 500

    replay(db_url, ids=[event.event_id], reason="recompute")
    replay(db_url, event_filter=None, ids=[event.event_id + 1], reason="again")
    run_pending(worker_url, router)
    outcomes = scalar(db_url, "select array_agg(outcome order by id) from inbox_attempts")
    assert outcomes == ["processed"] * 4
    assert scalar(db_url, "select count(*) from payments") == 1
    assert scalar(db_url, "select count(*) from github_deliveries") == 1
