"""Seeding the log in bulk with SQL, as the writers append: a key row first, which draws the
event's id and receipt time, then the event. Tests that need thousands of events, or events
received long ago, use this; the others write through ``InboxWriter``."""

from __future__ import annotations

from typing import Any

import psycopg

# The rows' columns, by name: source and idempotency_key, and any of received_at, body
# (text), event_type, verifier, headers (JSON), traceparent, ordering_key, order_at,
# on_dead. Read through to_jsonb, so a SELECT names only those it sets.
_ROWS = "select to_jsonb(x) as j from ({rows}) as x"

_SPAN = """
select min(t), max(t)
from (select coalesce((j->>'received_at')::timestamptz, now()) as t from ({rows_j}) as r) as s
"""

_SEED = """
with r as ({rows_j}),
given as (
    select j->>'source' as source, j->>'idempotency_key' as idempotency_key,
           (j->>'received_at')::timestamptz as received_at,
           convert_to(coalesce(j->>'body', ''), 'utf8') as body, j
    from r
),
keyed as (
    insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
    select source, idempotency_key, coalesce(received_at, now()), sha256(body) from given
    returning event_id, received_at, source, idempotency_key
)
insert into inbox_events
    (id, received_at, source, idempotency_key, event_type, verifier, headers, body,
     body_sha256, traceparent, ordering_key, order_at, on_dead)
select k.event_id, k.received_at, k.source, k.idempotency_key, g.j->>'event_type',
       g.j->>'verifier', coalesce(g.j->'headers', '{{}}'::jsonb), g.body, sha256(g.body),
       g.j->>'traceparent', g.j->>'ordering_key', (g.j->>'order_at')::timestamptz,
       g.j->>'on_dead'
from keyed k
join given g using (source, idempotency_key)
returning id
"""


def partitions_between(conn: psycopg.Connection[Any], first: Any, last: Any) -> None:
    """Make the log's partitions from ``first`` to ``last`` (as the writers would for an
    import: one per period)."""
    at = first
    while at <= last:
        row = conn.execute("select hi from inbox_partition_for(%s)", [at]).fetchone()
        assert row is not None
        at = row[0]


def seed_events(conn: psycopg.Connection[Any], rows: str, params: Any = ()) -> list[int]:
    """Append the events the SELECT ``rows`` describes; their ids, ascending. ``rows`` is
    always read for placeholders: a literal % is written %%."""
    rows_j = _ROWS.format(rows=rows)
    span = conn.execute(_SPAN.format(rows_j=rows_j), params).fetchone()
    if span is not None and span[0] is not None:
        partitions_between(conn, span[0], span[1])
    found = conn.execute(_SEED.format(rows_j=rows_j), params).fetchall()
    return sorted(int(row[0]) for row in found)
