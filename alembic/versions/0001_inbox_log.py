"""The inbox log, the work table, the attempt history and the delivery record."""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None


# The guard as this revision creates it. 0006 replaces it, and restores this text on its
# way down.
GUARD = """inbox_reject_change() returns trigger
    language plpgsql as $$
    begin
        if tg_op = 'DELETE' and current_setting('inbox.retention', true) = 'prune' then
            return old;
        end if;
        raise exception 'pg-inbox: % is append-only; % is not allowed', tg_table_name, tg_op
            using hint = 'events are kept exactly as received; '
                         'remove old ones with `inbox prune`, which is audited';
    end
    $$;
"""


def append_only(*tables: str) -> str:
    """The two triggers that keep each table append-only: one refuses UPDATE and DELETE, row
    by row; one refuses TRUNCATE, which fires no row trigger. 0003 guards its tables with it."""
    return "".join(
        f"""
    create trigger {table}_append_only
        before update or delete on {table}
        for each row execute function inbox_reject_change();
    create trigger {table}_no_truncate
        before truncate on {table}
        for each statement execute function inbox_reject_change();"""
        for table in tables
    )


def upgrade() -> None:
    op.execute(
        """
    -- The log: one row per distinct (source, idempotency_key), the body exactly as received.
    create table inbox_events (
        id               bigint generated always as identity primary key,
        source           text not null,
        idempotency_key  text not null,
        event_type       text,
        verifier         text,
        received_at      timestamptz not null default now(),
        headers          jsonb not null default '{}'::jsonb,
        body             bytea not null,
        body_sha256      bytea not null,
        constraint inbox_events_source_key unique (source, idempotency_key),
        constraint inbox_events_key_length check (length(idempotency_key) between 1 and 255),
        constraint inbox_events_sha256_length check (length(body_sha256) = 32)
    );
    create index inbox_events_received_at on inbox_events (received_at);

    -- The queue: only what must still be (re)processed. A row is deleted when its event
    -- settles, so the table stays small and the claim scan fast.
    create table inbox_work (
        event_id     bigint primary key references inbox_events (id),
        state        text not null default 'pending'
                     constraint inbox_work_state check (state in ('pending', 'dead')),
        priority     smallint not null default 0,
        run_at       timestamptz not null default now(),
        attempts     integer not null default 0,
        enqueued_at  timestamptz not null default now(),
        last_error   text,
        replay_id    bigint
    );
    -- Serves the claim: the pending rows in the order they are taken.
    create index inbox_work_claim on inbox_work (priority, run_at, event_id)
        where state = 'pending';

    -- The history: every attempt's start, end, outcome and error. Append-only.
    create table inbox_attempts (
        id             bigint generated always as identity primary key,
        event_id       bigint not null references inbox_events (id),
        attempt        integer not null,
        started_at     timestamptz not null,
        finished_at    timestamptz not null default now(),
        outcome        text not null,
        handler        text,
        worker         text,
        error_class    text,
        error_message  text,
        replay_id      bigint
    );
    create index inbox_attempts_event on inbox_attempts (event_id, id);

    -- Deliveries of an already-known key. The first delivery is the event row itself; each
    -- repeat is a row here, with its body kept only when it differs from the first.
    create table inbox_deliveries (
        id            bigint generated always as identity primary key,
        event_id      bigint not null references inbox_events (id),
        received_at   timestamptz not null default now(),
        body_sha256   bytea not null,
        body          bytea
    );
    create index inbox_deliveries_event on inbox_deliveries (event_id);

    -- Append-only, enforced by the database. The one way round it is the retention path,
    -- which sets inbox.retention = 'prune' for its own transaction and may only DELETE.
    create function """
        + GUARD
        + append_only("inbox_events", "inbox_attempts", "inbox_deliveries")
        + "\n    "  # the released text, to its last byte
    )


def downgrade() -> None:
    op.execute("""
    drop table inbox_deliveries;
    drop table inbox_attempts;
    drop table inbox_work;
    drop table inbox_events;
    drop function inbox_reject_change();
    """)
