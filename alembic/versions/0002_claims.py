"""The claim counter: how often an event was claimed without settling (crash protection)."""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.execute("""
    -- A worker that dies mid-batch never reaches its failure path, so each claim is counted
    -- here, on a separate autocommit connection, before the handlers run; settling an event
    -- (in the claim transaction) deletes its row. A row that survives means an unsettled
    -- claim: the event is a suspect, retried alone, and dead-lettered as 'crashed' after
    -- max_crashes. Rows exist only for in-flight and suspect events: the table stays tiny.
    -- No foreign key to inbox_work: its check would take a KEY SHARE lock on a work row the
    -- claim transaction holds FOR UPDATE, and the counting connection would wait for the
    -- very transaction that waits for it.
    create table inbox_claims (
        event_id         bigint primary key,
        claims           integer not null default 1,
        last_claimed_at  timestamptz not null default now(),
        last_worker      text
    );
    """)


def downgrade() -> None:
    op.execute("""
    drop table inbox_claims;
    """)
