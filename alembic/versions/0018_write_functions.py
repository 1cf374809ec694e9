"""Every writer writes through two functions of the owner's, so the receiver appends only
through them: it holds no INSERT on the key table, the log or the queue, and no row check
runs per work row. The functions' plans are kept for the life of the server's session,
which is what lets a pooled connection, which prepares nothing, skip the planning.
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"

# A function's variables and its tables' columns share names (source, received_at,
# event_id): a bare name is the column, a parameter is named with its function's name.
# The search_path is pinned (its schema, pg_temp last) as for the other SECURITY DEFINER
# functions (0006, 0016). Their plans are generic: left to choose, a session kept
# re-planning the group statement for each call, its array sizes making a custom plan
# look cheaper than the one it could keep.
WRITE_EVENT = """
    -- One new event, or a repeat delivery of a known key: insert_event's statement until
    -- this revision. The key table (inbox_keys) is what makes a key unique, for good: its
    -- row stays when the event's partition of the log is dropped, so a key delivered again
    -- after that is still a duplicate. It also draws the event's id. Only a key claimed
    -- here queues work: the work row is the new event's, whatever the caller sends.
    -- A key that was already there is recorded as a duplicate delivery (inbox_record_delivery
    -- reads a snapshot of its own, so one committed by a concurrent writer while this
    -- statement waited on it is found too). Should that key still be unseen, no row comes
    -- back and the caller runs record_duplicate.
    -- received_at: the receipt time to store (an import from another inbox); null: now.
    -- notify: send the wake-up NOTIFY inside this transaction (writes joined to a caller's
    -- transaction, whose commit the writer cannot observe); standalone writes notify after
    -- commit, coalesced. An ordered event (ordering_key not null) carries its key, its
    -- order timestamp (the given one, else its arrival) and its dead-letter policy, on the
    -- log (replays re-create work rows from it) and on its work row (the claim).
    create function inbox_write_event(
        source text, key text, event_type text, verifier text, headers jsonb, body bytea,
        body_sha256 bytea, ordering_key text, order_at timestamptz, on_dead text,
        traceparent text, tracestate text, received_at timestamptz, notify boolean)
    returns table (event_id bigint, is_new boolean)
    language plpgsql
    volatile
    security definer
    as $$
    #variable_conflict use_column
    begin
        return query
        with keyed as (
            insert into inbox_keys (source, idempotency_key, received_at, body_sha256)
            values (inbox_write_event.source, inbox_write_event.key,
                    coalesce(inbox_write_event.received_at, now()),
                    inbox_write_event.body_sha256)
            on conflict (source, idempotency_key) do nothing
            returning event_id, received_at
        ),
        ordering as (
            select keyed.event_id, keyed.received_at,
                   case when inbox_write_event.ordering_key is not null
                        then coalesce(inbox_write_event.order_at, keyed.received_at)
                   end as order_at
            from keyed
        ),
        inserted as (
            insert into inbox_events
                (id, received_at, source, idempotency_key, event_type, verifier, headers,
                 body, body_sha256, ordering_key, order_at, on_dead, traceparent, tracestate)
            select o.event_id, o.received_at, inbox_write_event.source,
                   inbox_write_event.key, inbox_write_event.event_type,
                   inbox_write_event.verifier, inbox_write_event.headers,
                   inbox_write_event.body, inbox_write_event.body_sha256,
                   inbox_write_event.ordering_key, o.order_at, inbox_write_event.on_dead,
                   inbox_write_event.traceparent, inbox_write_event.tracestate
            from ordering o
        ),
        queued as (
            insert into inbox_work
                (event_id, received_at, source, ordering_key, order_at, on_dead)
            select o.event_id, o.received_at,
                   case when inbox_write_event.ordering_key is not null
                        then inbox_write_event.source end,
                   inbox_write_event.ordering_key, o.order_at, inbox_write_event.on_dead
            from ordering o
        ),
        -- The FROM-less WHERE gates the call: it runs only when the key was not claimed here.
        known as (
            select inbox_record_delivery(inbox_write_event.source, inbox_write_event.key,
                                         inbox_write_event.body_sha256,
                                         inbox_write_event.body) as event_id
            where not exists (select from keyed)
        )
        select keyed.event_id, true
        from keyed
        left join lateral (select pg_notify('inbox_work', '')
                           where inbox_write_event.notify) as woken on true
        union all
        select known.event_id, false from known where known.event_id is not null;
    end
    $$;

    -- Group commit: the new events of several concurrent writes in one statement and one
    -- commit (insert_events' statement until this revision). Each input row comes back
    -- with its event id when this call claimed its key, or with a null id when its key was
    -- already taken: that write then goes the single way (inbox_write_event), which records
    -- the delivery. The caller sends each (source, key) at most once per group. Keys go in
    -- key order, so two groups that share keys wait on each other in the same order
    -- instead of deadlocking.
    -- A key that another transaction holds uncommitted (a write joined to a long
    -- application transaction) must not hold up the rest of the group: past a short lock
    -- wait the call fails (lock_not_available) and each write goes singly. The setting is
    -- local to the transaction, and is made while the input is read, which the insert's
    -- sort finishes before inserting (and so before waiting on) any key.
    create function inbox_write_events(
        sources text[], keys text[], event_types text[], verifiers text[], headers jsonb[],
        bodies bytea[], body_sha256s bytea[], ordering_keys text[], order_ats timestamptz[],
        on_deads text[], traceparents text[], tracestates text[], received_ats timestamptz[])
    returns table (n bigint, event_id bigint)
    language plpgsql
    volatile
    security definer
    as $$
    #variable_conflict use_column
    begin
        return query
        with wait_briefly as (
            select set_config('lock_timeout', '250ms', true)
        ),
        input as (
            select i.*
            from unnest(inbox_write_events.sources, inbox_write_events.keys,
                        inbox_write_events.event_types, inbox_write_events.verifiers,
                        inbox_write_events.headers, inbox_write_events.bodies,
                        inbox_write_events.body_sha256s, inbox_write_events.ordering_keys,
                        inbox_write_events.order_ats, inbox_write_events.on_deads,
                        inbox_write_events.traceparents, inbox_write_events.tracestates,
                        inbox_write_events.received_ats) with ordinality
                as i(source, idempotency_key, event_type, verifier, headers, body,
                     body_sha256, ordering_key, given_order_at, on_dead, traceparent,
                     tracestate, given_received_at, n)
            cross join wait_briefly
        ),
        keyed as (
            insert into inbox_keys as k (source, idempotency_key, received_at, body_sha256)
            select i.source, i.idempotency_key, coalesce(i.given_received_at, now()),
                   i.body_sha256
            from input i
            order by i.source, i.idempotency_key
            on conflict (source, idempotency_key) do nothing
            returning k.event_id, k.received_at, k.source, k.idempotency_key
        ),
        ordered as (
            -- As in inbox_write_event: an ordered event without a timestamp is ordered by
            -- arrival.
            select keyed.event_id, keyed.received_at, i.*,
                   case when i.ordering_key is not null
                        then coalesce(i.given_order_at, keyed.received_at) end as order_at
            from keyed
            join input i on i.source = keyed.source
                        and i.idempotency_key = keyed.idempotency_key
        ),
        inserted as (
            insert into inbox_events
                (id, received_at, source, idempotency_key, event_type, verifier, headers,
                 body, body_sha256, ordering_key, order_at, on_dead, traceparent, tracestate)
            select o.event_id, o.received_at, o.source, o.idempotency_key, o.event_type,
                   o.verifier, o.headers, o.body, o.body_sha256, o.ordering_key, o.order_at,
                   o.on_dead, o.traceparent, o.tracestate
            from ordered o
        ),
        queued as (
            insert into inbox_work
                (event_id, received_at, source, ordering_key, order_at, on_dead)
            select o.event_id, o.received_at,
                   case when o.ordering_key is not null then o.source end,
                   o.ordering_key, o.order_at, o.on_dead
            from ordered o
        )
        select i.n, keyed.event_id
        from input i
        left join keyed on keyed.source = i.source
                       and keyed.idempotency_key = i.idempotency_key
        order by i.n;
    end
    $$;
"""

FUNCTIONS = (
    "inbox_write_event(text, text, text, text, jsonb, bytea, bytea, text, timestamptz, text,"
    " text, text, timestamptz, boolean)",
    "inbox_write_events(text[], text[], text[], text[], jsonb[], bytea[], bytea[], text[],"
    " timestamptz[], text[], text[], text[], timestamptz[])",
)


def upgrade() -> None:
    functions = ", ".join(FUNCTIONS)
    names = ", ".join(f"'{f}'" for f in FUNCTIONS)
    op.execute(
        WRITE_EVENT
        + f"""
    revoke execute on function {functions} from public;
    do $$
    declare
        f text;
    begin
        foreach f in array array[{names}] loop
            execute format('alter function %s set search_path = %I, pg_temp'
                           ' set plan_cache_mode = force_generic_plan',
                           f, current_schema());
        end loop;
    end
    $$;

    -- Nobody but the owner queues work directly any more: with row security on and no
    -- policy for INSERT, a receiver that still holds its old grant is refused (run `inbox
    -- db roles` to move it to the functions).
    drop policy inbox_work_queue on inbox_work;
    drop function inbox_work_is_new(bigint, timestamptz);
    """
    )


def downgrade() -> None:
    work_is_new = op.get_context().script.get_revision("0016").module.WORK_IS_NEW
    op.execute(
        work_is_new
        + """
    create policy inbox_work_queue on inbox_work for insert
        with check (inbox_work_is_new(event_id, received_at));
    drop function inbox_write_events(text[], text[], text[], text[], jsonb[], bytea[],
                                     bytea[], text[], timestamptz[], text[], text[], text[],
                                     timestamptz[]);
    drop function inbox_write_event(text, text, text, text, jsonb, bytea, bytea, text,
                                    timestamptz, text, text, text, timestamptz, boolean);
    """
    )
