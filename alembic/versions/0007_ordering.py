"""Ordered processing per key: the ordering key and order timestamp on the log and on the
work rows, the index that finds a key's head, a per-key slot in the claim counters, and
``inbox dead skip`` as an audited function."""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.execute("""
    -- The log keeps how an event was to be ordered, as computed when it was received: a
    -- replay re-creates its work row from here. All three are null for an unordered event.
    -- on_dead is the source's setting then: changing it later applies to new events.
    alter table inbox_events
        add column ordering_key text,
        add column order_at timestamptz,
        add column on_dead text
            constraint inbox_events_on_dead check (on_dead in ('hold', 'continue'));

    -- The same on the work row, for the claim; `source` is copied only for ordered rows,
    -- because a key is (source, ordering_key) and the claim must find a key's rows by
    -- index without joining the log.
    alter table inbox_work
        add column source text,
        add column ordering_key text,
        add column order_at timestamptz,
        add column on_dead text
            constraint inbox_work_on_dead check (on_dead in ('hold', 'continue')),
        add constraint inbox_work_ordered check (
            (ordering_key is null) = (source is null)
            and (ordering_key is null) = (order_at is null)
            and (ordering_key is null) = (on_dead is null));

    -- A key's rows in key order (live before replays, then the order timestamp, then
    -- arrival). Only rows that hold their key are in it: every pending row, and a dead one
    -- whose source holds on a dead letter; so the first entry of a key is its head, and the
    -- claim finds it with one probe however long the key's backlog is.
    create index inbox_work_key on inbox_work (source, ordering_key, priority, order_at, event_id)
        where ordering_key is not null and (state = 'pending' or on_dead = 'hold');

    -- A claim counter also takes its event's key: the unique index lets one event per key be
    -- in flight (or a suspect, after a crash) at a time, whatever two workers' snapshots
    -- saw. The counters are written on an autocommit connection before any handler runs.
    alter table inbox_claims
        add column source text,
        add column ordering_key text;
    create unique index inbox_claims_key on inbox_claims (source, ordering_key)
        where ordering_key is not null;

    -- `inbox dead skip` is recorded like a replay run.
    alter table inbox_replays drop constraint inbox_replays_kind;
    alter table inbox_replays add constraint inbox_replays_kind
        check (kind in ('replay', 'dead-retry', 'dead-skip'));

    -- The one way a dead letter leaves the work table unprocessed: its audit row, one
    -- 'skipped' attempt per event naming the run, and the delete, in one statement. An
    -- operator may not delete work rows otherwise (so no event can vanish unrecorded);
    -- this runs as the owner, and only on dead rows.
    create function inbox_dead_skip(event_ids bigint[], created_by text, reason text,
                                    via text, filter jsonb)
    returns table (skip_id bigint, event_id bigint)
    language sql
    security definer
    as $$
    with run as (
        select nextval(pg_get_serial_sequence('inbox_replays', 'id')) as id
    ),
    doomed as (
        select w.event_id, w.attempts, w.replay_id
        from inbox_work w
        where w.event_id = any(inbox_dead_skip.event_ids) and w.state = 'dead'
        for update of w
    ),
    gone as (
        delete from inbox_work w using doomed d where w.event_id = d.event_id
        returning w.event_id
    ),
    attempted as (
        insert into inbox_attempts
            (event_id, attempt, started_at, finished_at, outcome, handler, worker,
             error_class, error_message, replay_id)
        select d.event_id, d.attempts, now(), now(), 'skipped', null,
               inbox_dead_skip.created_by, 'Skipped', inbox_dead_skip.reason, run.id
        from doomed d, run
    ),
    recorded as (
        insert into inbox_replays
            (id, kind, created_by, reason, filter, selected, queued, via)
        overriding system value
        select run.id, 'dead-skip', inbox_dead_skip.created_by, inbox_dead_skip.reason,
               inbox_dead_skip.filter, cardinality(inbox_dead_skip.event_ids),
               (select count(*) from doomed), inbox_dead_skip.via
        from run
        where exists (select from doomed)
    )
    select run.id, gone.event_id from run, gone
    $$;
    revoke execute on function inbox_dead_skip(bigint[], text, text, text, jsonb) from public;
    do $$
    begin
        execute format('alter function inbox_dead_skip(bigint[], text, text, text, jsonb)'
                       ' set search_path = %I, pg_temp', current_schema());
    end
    $$;
    """)


def downgrade() -> None:
    op.execute("""
    drop function inbox_dead_skip(bigint[], text, text, text, jsonb);
    -- The log of skips stays (it is append-only): the old check holds for new rows only.
    alter table inbox_replays drop constraint inbox_replays_kind;
    alter table inbox_replays add constraint inbox_replays_kind
        check (kind in ('replay', 'dead-retry')) not valid;
    drop index inbox_claims_key;
    alter table inbox_claims drop column ordering_key, drop column source;
    drop index inbox_work_key;
    alter table inbox_work
        drop constraint inbox_work_ordered,
        drop column on_dead,
        drop column order_at,
        drop column ordering_key,
        drop column source;
    alter table inbox_events
        drop column on_dead,
        drop column order_at,
        drop column ordering_key;
    """)
