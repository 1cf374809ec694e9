"""Operator records: replay runs and prunes (both audited, append-only), and the indexes
that keep ``inbox status`` cheap."""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.execute("""
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

    create trigger inbox_replays_append_only
        before update or delete on inbox_replays
        for each row execute function inbox_reject_change();
    create trigger inbox_replays_no_truncate
        before truncate on inbox_replays
        for each statement execute function inbox_reject_change();
    create trigger inbox_prunes_append_only
        before update or delete on inbox_prunes
        for each row execute function inbox_reject_change();
    create trigger inbox_prunes_no_truncate
        before truncate on inbox_prunes
        for each statement execute function inbox_reject_change();

    -- `inbox status` counts recent duplicates and settled attempts by time. Both columns
    -- only grow, so these indexes are appended at their right edge: cheap to maintain.
    create index inbox_deliveries_received_at on inbox_deliveries (received_at);
    create index inbox_attempts_finished_at on inbox_attempts (finished_at);
    """)


def downgrade() -> None:
    op.execute("""
    drop index inbox_attempts_finished_at;
    drop index inbox_deliveries_received_at;
    drop table inbox_prunes;
    drop table inbox_replays;
    """)
