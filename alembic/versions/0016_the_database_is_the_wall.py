"""Each part may do only what its job needs, whatever it sends: the receiver queues work
only for an event whose key it wrote in the same transaction and records a duplicate only
through the key; operators queue, retry and skip only through audited functions, which
record the database login beside the stated actor; workers never settle a dead letter and
write attempts only for events with work.
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"

# Whether a row's xmin is this transaction's (or one of its subtransactions'): rows that
# another transaction wrote are committed (or invisible), ours are still in progress. The
# 32-bit xid is widened with the current xid's epoch for pg_xact_status.
WRITTEN_HERE = """
    create function inbox_written_here(x xid)
    returns boolean
    language sql
    volatile
    as $$
    select x::text = (pg_current_xact_id()::text::bigint % 4294967296)::text
        or pg_xact_status((pg_current_xact_id()::text::bigint
                           + ((x::text::bigint
                               - pg_current_xact_id()::text::bigint % 4294967296
                               + 6442450944) % 4294967296)
                           - 2147483648)::text::xid8) = 'in progress'
    $$;
"""


# The receiver's work check (row security on inbox_work for INSERT); 0018 drops it, and
# its downgrade makes it again.
WORK_IS_NEW = """\
    do $do$
    begin
        execute format($f$
    create function inbox_work_is_new(event_id bigint, received_at timestamptz)
    returns boolean
    language plpgsql
    volatile
    as $$
    declare
        x bigint;
        cur bigint := pg_catalog.pg_current_xact_id()::text::bigint;
    begin
        select k.xmin::text::bigint into x
        from %I.inbox_keys k
        where k.event_id operator(pg_catalog.=) inbox_work_is_new.event_id
          and k.received_at operator(pg_catalog.=) inbox_work_is_new.received_at;
        if x is null then
            return false;
        end if;
        if x operator(pg_catalog.=) (cur operator(pg_catalog.%%) 4294967296) then
            return true;
        end if;
        return pg_catalog.pg_xact_status((
            cur operator(pg_catalog.+)
            ((x operator(pg_catalog.-) (cur operator(pg_catalog.%%) 4294967296)
              operator(pg_catalog.+) 6442450944) operator(pg_catalog.%%) 4294967296)
            operator(pg_catalog.-) 2147483648)::text::xid8)
            operator(pg_catalog.=) 'in progress';
    end
    $$;
    $f$, current_schema());
    end
    $do$;
"""


def upgrade() -> None:
    op.execute(
        """
    -- The database login that ran an audited action, beside the actor it says it is
    -- (created_by): the default is the session's, which a SECURITY DEFINER function does
    -- not change. Rows written before this revision have none.
    alter table inbox_replays add column login text;
    alter table inbox_replays alter column login set default session_user;
    alter table inbox_prunes add column login text;
    alter table inbox_prunes alter column login set default session_user;
"""
        + WRITTEN_HERE
        + """
    -- A work row written by anyone but the owner (the receiver, in insert_event) must be
    -- the new event's: its key row was written in this transaction, so its id was drawn
    -- here. The check is row security's (the owner, and the audited functions, which run
    -- as the owner, queue any event); it runs as each row is written, when its key row,
    -- written earlier by the same statement, is visible only to a volatile function's
    -- fresh snapshot: hence a function, not an inline expression.
    -- Without a SET clause, which would cost each call a save and restore of the
    -- settings: every name is qualified instead (the schema's when it is made, pg_catalog's
    -- operators), so no search_path of the caller's (a temporary inbox_keys, an operator of
    -- its own) answers for them.
"""
        + WORK_IS_NEW
        + """
    -- A repeat delivery of a known key: the database finds the key's event and compares
    -- the body's hash; the caller names the key, never an event. The event's id, or null
    -- when the key is unknown.
    create function inbox_record_delivery(source text, key text, body_sha256 bytea,
                                          body bytea)
    returns bigint
    language sql
    volatile
    security definer
    as $$
    with known as (
        select k.event_id, k.body_sha256
        from inbox_keys k
        where k.source = inbox_record_delivery.source
          and k.idempotency_key = inbox_record_delivery.key
    ),
    delivered as (
        insert into inbox_deliveries (event_id, body_sha256, body)
        select known.event_id, inbox_record_delivery.body_sha256,
               case when known.body_sha256 <> inbox_record_delivery.body_sha256
                    then inbox_record_delivery.body end
        from known
    )
    select event_id from known
    $$;

    -- A replay or dead-letter retry starts with its audit row (who says they ran it, the
    -- login that did, why, the selection and its counts); its id. Its work is queued by
    -- inbox_replay_enqueue, within the same transaction.
    create function inbox_replay_begin(kind text, created_by text, reason text, filter jsonb,
                                       selected integer, queued integer,
                                       rate_per_second float8, via text,
                                       required_version text)
    returns bigint
    language sql
    volatile
    security definer
    as $$
    insert into inbox_replays
        (kind, created_by, reason, filter, selected, queued, rate_per_second, via,
         required_version)
    values (inbox_replay_begin.kind, inbox_replay_begin.created_by, inbox_replay_begin.reason,
            inbox_replay_begin.filter, inbox_replay_begin.selected, inbox_replay_begin.queued,
            inbox_replay_begin.rate_per_second, inbox_replay_begin.via,
            inbox_replay_begin.required_version)
    returning id
    $$;

    -- Queue one chunk of a run begun in this transaction (an older run's id is refused: a
    -- run's audit row says what it queued), as replay.sql's enqueue_replay did: priority 1,
    -- spread out by the run's rate, a dead letter revived with a fresh budget, an event
    -- with pending work left alone, the run's required version. Every event given must be
    -- queued, or none is: a selection that changed since it was counted fails as a
    -- serialization failure (the caller starts over). The ids queued.
    create function inbox_replay_enqueue(run_id bigint, event_ids bigint[], done_before bigint)
    returns setof bigint
    language plpgsql
    volatile
    security definer
    as $$
    declare
        run inbox_replays;
        done bigint[];
    begin
        select * into run from inbox_replays r
        where r.id = inbox_replay_enqueue.run_id and r.kind <> 'dead-skip'
          and inbox_written_here(r.xmin);
        if not found then
            raise exception 'pg-inbox: replay run % was not begun in this transaction',
                            inbox_replay_enqueue.run_id
                using errcode = 'insufficient_privilege',
                      hint = 'begin the run with inbox_replay_begin first';
        end if;
        with enqueued as (
            insert into inbox_work
                (event_id, received_at, priority, run_at, replay_id, source, ordering_key,
                 order_at, on_dead, required_version)
            select t.event_id,
                   e.received_at,
                   1,
                   case
                       when run.rate_per_second is null then now()
                       else now() + make_interval(
                           secs => (inbox_replay_enqueue.done_before + t.n - 1)
                                   / run.rate_per_second)
                   end,
                   run.id,
                   case when e.ordering_key is not null then e.source end,
                   e.ordering_key,
                   e.order_at,
                   e.on_dead,
                   run.required_version
            from unnest(inbox_replay_enqueue.event_ids) with ordinality as t(event_id, n)
            join inbox_keys k on k.event_id = t.event_id
            cross join lateral (
                select e.received_at, e.source, e.ordering_key, e.order_at, e.on_dead
                from inbox_events e
                where e.id = k.event_id and e.received_at = k.received_at
                offset 0
            ) as e
            on conflict (event_id) do update
                set state = 'pending',
                    priority = case when inbox_work.ordering_key is null
                                    then excluded.priority
                                    else inbox_work.priority end,
                    run_at = excluded.run_at,
                    attempts = 0,
                    last_error = null,
                    enqueued_at = now(),
                    replay_id = excluded.replay_id,
                    required_version = excluded.required_version
                where inbox_work.state = 'dead'
            returning inbox_work.event_id
        )
        select coalesce(array_agg(enqueued.event_id), '{}') into done from enqueued;
        if cardinality(done) <> cardinality(inbox_replay_enqueue.event_ids) then
            raise exception 'pg-inbox: % of the % events of replay run % could not be queued'
                            ' (pending already, or unknown)',
                            cardinality(inbox_replay_enqueue.event_ids) - cardinality(done),
                            cardinality(inbox_replay_enqueue.event_ids), run.id
                using errcode = 'serialization_failure';
        end if;
        return query select unnest(done);
    end
    $$;

    -- Workers claim and settle pending work: a dead letter leaves the queue only through
    -- an operator's audited retry or skip (which run as the owner, whom these policies do
    -- not bind). An attempt is written only for an event with work. Every other command
    -- is as the grants say.
    alter table inbox_work enable row level security;
    create policy inbox_work_read on inbox_work for select using (true);
    create policy inbox_work_queue on inbox_work for insert
        with check (inbox_work_is_new(event_id, received_at));
    create policy inbox_work_settle on inbox_work for update
        using (state = 'pending') with check (true);
    create policy inbox_work_done on inbox_work for delete using (state = 'pending');
    alter table inbox_attempts enable row level security;
    create policy inbox_attempts_read on inbox_attempts for select using (true);
    -- The settle's snapshot still holds the work rows its own statement deletes.
    create policy inbox_attempts_of_work on inbox_attempts for insert
        with check (exists (
            select from inbox_work w
            where w.event_id = inbox_attempts.event_id
              and w.received_at = inbox_attempts.received_at
        ));

    revoke execute on function inbox_record_delivery(text, text, bytea, bytea) from public;
    revoke execute on function inbox_replay_begin(text, text, text, jsonb, integer, integer,
                                                  float8, text, text) from public;
    revoke execute on function inbox_replay_enqueue(bigint, bigint[], bigint) from public;

    -- SECURITY DEFINER functions run with their schema pinned, pg_temp last (0006).
    do $$
    declare
        f text;
    begin
        foreach f in array array['inbox_record_delivery(text, text, bytea, bytea)',
                                 'inbox_replay_begin(text, text, text, jsonb, integer,'
                                 ' integer, float8, text, text)',
                                 'inbox_replay_enqueue(bigint, bigint[], bigint)'] loop
            execute format('alter function %s set search_path = %I, pg_temp',
                           f, current_schema());
        end loop;
    end
    $$;
    """
    )


def downgrade() -> None:
    op.execute("""
    drop policy inbox_attempts_of_work on inbox_attempts;
    drop policy inbox_attempts_read on inbox_attempts;
    alter table inbox_attempts disable row level security;
    drop policy inbox_work_done on inbox_work;
    drop policy inbox_work_settle on inbox_work;
    drop policy inbox_work_queue on inbox_work;
    drop policy inbox_work_read on inbox_work;
    alter table inbox_work disable row level security;
    drop function inbox_replay_enqueue(bigint, bigint[], bigint);
    drop function inbox_replay_begin(text, text, text, jsonb, integer, integer, float8, text,
                                     text);
    drop function inbox_record_delivery(text, text, bytea, bytea);
    drop function inbox_work_is_new(bigint, timestamptz);
    drop function inbox_written_here(xid);
    alter table inbox_prunes drop column login;
    alter table inbox_replays drop column login;
    """)
