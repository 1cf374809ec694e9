"""The README's Processing example, run as written: against the example schema, on the
event `inbox send stripe --type invoice.paid` sends, and again under a replay."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import psycopg

from inbox import InboxWriter, load_settings
from inbox._receiving.samples import build_sample
from inbox.queries import replay
from processors import Router
from tests._wait import scalar
from tests.processors._support import run_worker_until, settings

REPO = Path(__file__).resolve().parent.parent


def _processing_example() -> Router:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Processing") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None, "the Processing section has no Python example"
    namespace: dict[str, Any] = {"rate_limited": lambda: False}
    exec(compile(code.group(1), "README.md (Processing)", "exec"), namespace)  # noqa: S102 - our own README
    router = namespace["router"]
    assert isinstance(router, Router)
    return router


def _example_schema() -> str:
    # The example handlers' tables; wherever the examples live (a folder, or the package).
    found = sorted((REPO / "processors" / "examples").glob("schema.sql"))
    assert found, "no example schema.sql"
    return found[0].read_text(encoding="utf-8")


def test_the_readme_handler_records_the_sample_invoice_and_survives_a_replay(
    db_url: str,
) -> None:
    with psycopg.connect(db_url) as conn:
        conn.execute(_example_schema().encode())
    stripe = load_settings(REPO / "config" / "inbox.toml").source("stripe")
    assert stripe is not None
    sample = build_sample(
        stripe, url="http://127.0.0.1/webhooks/stripe", now=time.time(), event_type="invoice.paid"
    )
    with InboxWriter(db_url) as writer:
        event_id = writer.write(
            "stripe", sample.key, sample.body, headers=sample.headers, event_type="invoice.paid"
        ).event_id
    router = _processing_example()

    def settled() -> bool:
        return scalar(db_url, "select count(*) from inbox_work") == 0

    run_worker_until(db_url, router, settled, worker_settings=settings(), what="the invoice")
    replayed = replay(db_url, reason="recompute", ids=[event_id], include_processed=True)
    assert replayed.already_processed == 1
    run_worker_until(db_url, router, settled, worker_settings=settings(), what="the replay")

    outcomes = scalar(
        db_url,
        "select array_agg(outcome order by id) from inbox_attempts where event_id = %s",
        [event_id],
    )
    assert outcomes == ["processed", "processed"]  # the replay succeeded too
    payments = scalar(
        db_url, "select array_agg((provider_id, amount, currency)::text) from payments"
    )
    assert payments == [f"({sample.key},100,usd)"]  # once, however often it ran
