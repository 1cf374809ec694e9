"""The database queues each new event's work itself, so the receiver needs no grant on the
work table: it appends events and nothing else. An event must be its key's, drawn in the
same transaction, or the statement fails.
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"


def upgrade() -> None:
    op.execute("""
    -- The error of an event without its key: called only for such a row, so a good
    -- statement pays for no second statement (a count to compare).
    create function inbox_refuse_unkeyed_event(event_id bigint)
    returns bigint
    language plpgsql
    as $$
    begin
        raise exception 'pg-inbox: event % was appended without its key', event_id
            using errcode = 'insufficient_privilege',
                  hint = 'an event is appended with the key row that drew its id,'
                         ' in the same transaction';
    end
    $$;
    -- Once per statement that appends events, with the rows it appended: their work rows,
    -- as the writers used to queue them (an ordered event's carry its source, key, order
    -- and dead-letter policy). Each event must have the key row that drew its id, written
    -- in this transaction: an event row made up by hand (a stored event's id, a pruned
    -- one's) is refused, so nothing but a new key's event is ever queued. It runs as the
    -- owner, whom row security does not bind, and once per statement: cheaper than 0016's
    -- row-security check of each work row (a lookup of its key through SPI a row), which
    -- stays for the writers of that revision. A work row already there is left alone: such
    -- a writer queues its own in the same statement (during a rolling upgrade).
    create function inbox_queue_new_events()
    returns trigger
    language plpgsql
    security definer
    as $$
    begin
        insert into inbox_work (event_id, received_at, source, ordering_key, order_at, on_dead)
        select case when inbox_written_here(k.xmin) then n.id
                    else inbox_refuse_unkeyed_event(n.id) end,
               n.received_at, case when n.ordering_key is not null then n.source end,
               n.ordering_key, n.order_at, n.on_dead
        from inbox_new_events n
        left join inbox_keys k
          on k.event_id = n.id and k.received_at = n.received_at
         and k.source = n.source and k.idempotency_key = n.idempotency_key
        on conflict (event_id) do nothing;
        return null;
    end
    $$;
    create trigger inbox_events_queue after insert on inbox_events
        referencing new table as inbox_new_events
        for each statement execute function inbox_queue_new_events();
    revoke execute on function inbox_queue_new_events() from public;

    do $$
    begin
        execute format('alter function inbox_queue_new_events() set search_path = %I, pg_temp',
                       current_schema());
    end
    $$;
    """)


def downgrade() -> None:
    op.execute("""
    drop trigger inbox_events_queue on inbox_events;
    drop function inbox_queue_new_events();
    drop function inbox_refuse_unkeyed_event(bigint);
    """)
