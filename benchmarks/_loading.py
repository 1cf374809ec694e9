"""The processing benchmarks' backlogs and histories, loaded set-based into a migrated
database (one ``INSERT … SELECT generate_series``; the writer's tables and columns, not the
writer, which the ingest benchmark measures)."""

from __future__ import annotations

import json
import random

import psycopg

from benchmarks._payloads import EVENT_TYPE, make_body, make_headers

__all__ = ["analyze", "load_history", "load_inbox_backlog"]

# As the writer appends: the key first (it draws the id), then the event, then its work.
LOAD_BACKLOG = """
with keyed as (
    insert into inbox_keys (source, idempotency_key, body_sha256)
    select 'bench', %(tag)s || '-' || g, sha256(%(body)s::bytea)
    from generate_series(1, %(n)s) as g
    order by g
    returning event_id, received_at, source, idempotency_key
),
ev as (
    insert into inbox_events
        (id, received_at, source, idempotency_key, event_type, headers, body, body_sha256)
    select k.event_id, k.received_at, k.source, k.idempotency_key, %(event_type)s,
           %(headers)s::jsonb, %(body)s::bytea, sha256(%(body)s::bytea)
    from keyed k
    order by k.event_id
    returning id, received_at
)
insert into inbox_work (event_id, received_at) select id, received_at from ev
"""

LOAD_HISTORY = """
with keyed as (
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    select 'history', 'h-' || g, now() - interval '30 days' + g * interval '1 ms',
           sha256(%(body)s::bytea)
    from generate_series(1, %(n)s) as g
    order by g
    returning event_id, received_at, source, idempotency_key
),
ev as (
    insert into inbox_events
        (id, received_at, source, idempotency_key, event_type, headers, body, body_sha256)
    select k.event_id, k.received_at, k.source, k.idempotency_key, %(event_type)s, '{}'::jsonb,
           %(body)s::bytea, sha256(%(body)s::bytea)
    from keyed k
    order by k.event_id
    returning id, received_at
)
insert into inbox_attempts
    (event_id, received_at, attempt, started_at, finished_at, outcome, handler, worker)
select id, received_at, 1, received_at, received_at + interval '2 ms', 'processed',
       'bench.history', 'history:1/0'
from ev
"""


def load_inbox_backlog(url: str, n: int, *, notify: bool = False, vacuum: bool = False) -> None:
    """Load ``n`` pending events in one statement, then ANALYZE, or with ``vacuum`` VACUUM
    ANALYZE: the state autovacuum leaves a backlog in, its hint bits set (see
    benchmarks._backlog for why the backlog figure needs it)."""
    key = "evt_0000000000000000000000"
    with psycopg.connect(url) as conn:
        conn.execute(
            LOAD_BACKLOG,
            {
                "tag": f"b{random.getrandbits(32):08x}",
                "n": n,
                "event_type": EVENT_TYPE,
                "headers": json.dumps(make_headers(key)),
                "body": make_body(key),
            },
        )
        if notify:
            conn.execute("select pg_notify('inbox_work', '')")
    analyze(url, vacuum=vacuum)


def load_history(url: str, n: int) -> None:
    body = make_body("h")[:200]
    with psycopg.connect(url) as conn:
        conn.execute(
            "select count(*) from generate_series(now() - interval '31 days', now(),"
            " interval '1 day') t cross join lateral inbox_partition_for(t)"
        )
        conn.execute(LOAD_HISTORY, {"n": n, "event_type": EVENT_TYPE, "body": body})
    analyze(url, vacuum=True)


def analyze(url: str, *, vacuum: bool = False) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("vacuum analyze" if vacuum else "analyze")
