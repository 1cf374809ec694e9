"""Operator records: replay runs and prunes (both audited, append-only), and the indexes
that keep ``inbox status`` cheap."""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    # The guard triggers as 0001 writes them, taken from that revision (alembic loaded it):
    # a released revision never changes, so what it defines is safe to reuse.
    append_only = op.get_context().script.get_revision("0001").module.append_only
    op.execute(
        """
    -- One row per replay run (and per dead-letter retry, kind 'dead-retry'): who, when, why,
    -- what was selected, how much of it was queued. Work rows and attempts carry the id.
    -- The id is drawn first and the row written last, in the run's transaction, so the
    -- record holds the final counts and never needs an UPDATE.
    create table inbox_replays (
        id            bigint generated always as identity primary key,
        kind          text not null default 'replay'
                      constraint inbox_replays_kind check (kind in ('replay', 'dead-retry')),
        created_at    timestamptz not null default now(),
        created_by    text not null,
        reason        text not null
                      constraint inbox_replays_reason check (length(btrim(reason)) > 0),
        filter        jsonb not null,
        selected      integer not null,
        queued        integer not null,
        rate_per_second  float8
    );

    -- One row per prune: the audit trail of the only path that removes events.
    create table inbox_prunes (
        id                  bigint generated always as identity primary key,
        created_at          timestamptz not null default now(),
        created_by          text not null,
        older_than_seconds  float8 not null,
        cutoff              timestamptz not null,
        events_deleted      integer not null,
        deliveries_deleted  integer not null,
        attempts_deleted    integer not null,
        events_kept         integer not null
    );
"""
        + append_only("inbox_replays", "inbox_prunes")
        + """

    -- `inbox status` counts recent duplicates and settled attempts by time. Both columns
    -- only grow, so these indexes are appended at their right edge: cheap to maintain.
    create index inbox_deliveries_received_at on inbox_deliveries (received_at);
    create index inbox_attempts_finished_at on inbox_attempts (finished_at);
    """
    )


def downgrade() -> None:
    op.execute("""
    drop index inbox_attempts_finished_at;
    drop index inbox_deliveries_received_at;
    drop table inbox_prunes;
    drop table inbox_replays;
    """)
