"""Deletion only through an audited function: ``inbox_prune`` (SECURITY DEFINER) writes
its audit row and deletes in one statement; the session-settable bypass of the
append-only guard goes away."""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    op.execute("""
    -- The guard lets a DELETE through only while inbox_prune runs: its SET clause opens
    -- inbox.prune_door for the call alone, and it runs as its owner, who owns the tables.
    -- Anyone can set a custom setting, so the setting alone proves nothing; what a session
    -- cannot forge is current_user = the table's owner (short of being that owner, who can
    -- drop the trigger anyway). The owner is read from the table the trigger fired on, not
    -- looked up by name, and search_path is pinned, so a look-alike function or catalog in
    -- a schema of the attacker's cannot answer in its place.
    create or replace function inbox_reject_change() returns trigger
    language plpgsql
    set search_path = pg_catalog, pg_temp
    as $$
    begin
        if tg_op = 'DELETE'
           and current_setting('inbox.prune_door', true) = 'open'
           and (select c.relowner from pg_class c where c.oid = tg_relid)
               = (select r.oid from pg_roles r where r.rolname = current_user) then
            return old;
        end if;
        raise exception 'pg-inbox: % is append-only; % is not allowed', tg_table_name, tg_op
            using hint = 'events are kept exactly as received; '
                         'remove old ones with `inbox prune`, which is audited';
    end
    $$;

    -- The only path that removes events: events older than the cutoff with no work left
    -- (pending, retrying or dead events are kept), their deliveries and attempts, and the
    -- audit row, in one statement (foreign keys are checked at its end, when the children
    -- are gone too). The cutoff is computed here from the database clock, so the audit
    -- row says what was really removed whatever the caller claims.
    create function inbox_prune(older_than_seconds float8, created_by text, via text)
    returns table (audit_id bigint, cutoff timestamptz, events_deleted integer,
                   deliveries_deleted integer, attempts_deleted integer, events_kept integer)
    language sql
    security definer
    set inbox.prune_door = 'open'
    as $$
    with limits as (
        select now() - make_interval(secs => inbox_prune.older_than_seconds) as cutoff
    ),
    doomed as (
        select e.id
        from inbox_events e, limits
        where e.received_at < limits.cutoff
          and not exists (select from inbox_work w where w.event_id = e.id)
        for update of e
    ),
    kept as (
        select count(*) as n
        from inbox_events e, limits
        where e.received_at < limits.cutoff
          and exists (select from inbox_work w where w.event_id = e.id)
    ),
    deliveries as (
        delete from inbox_deliveries d using doomed where d.event_id = doomed.id returning 1
    ),
    attempts as (
        delete from inbox_attempts a using doomed where a.event_id = doomed.id returning 1
    ),
    events as (
        delete from inbox_events e using doomed where e.id = doomed.id returning 1
    )
    insert into inbox_prunes
        (created_by, via, older_than_seconds, cutoff, events_deleted, deliveries_deleted,
         attempts_deleted, events_kept)
    select inbox_prune.created_by, inbox_prune.via, inbox_prune.older_than_seconds,
           limits.cutoff,
           (select count(*) from events), (select count(*) from deliveries),
           (select count(*) from attempts), (select n from kept)
    from limits
    returning id, cutoff, events_deleted, deliveries_deleted, attempts_deleted, events_kept
    $$;

    -- What a prune would remove and keep, for a retention role that may read nothing else.
    create function inbox_prune_preview(older_than_seconds float8)
    returns table (cutoff timestamptz, deletable bigint, kept bigint)
    language sql
    stable
    security definer
    as $$
    select now() - make_interval(secs => inbox_prune_preview.older_than_seconds),
           count(*) filter (where w.event_id is null),
           count(*) filter (where w.event_id is not null)
    from inbox_events e
    left join inbox_work w on w.event_id = e.id
    where e.received_at < now() - make_interval(secs => inbox_prune_preview.older_than_seconds)
    $$;

    -- Functions are executable by PUBLIC by default: only roles granted it may prune.
    revoke execute on function inbox_prune(float8, text, text) from public;
    revoke execute on function inbox_prune_preview(float8) from public;

    -- PostgreSQL's advice for SECURITY DEFINER: a pinned search_path holding only trusted
    -- schemas, pg_temp last, so a caller's objects never stand in for ours. Ours is the
    -- schema this migration runs in.
    do $$
    begin
        execute format('alter function inbox_prune(float8, text, text)'
                       ' set search_path = %I, pg_temp', current_schema());
        execute format('alter function inbox_prune_preview(float8)'
                       ' set search_path = %I, pg_temp', current_schema());
    end
    $$;
    """)


def downgrade() -> None:
    # Back to the guard 0001 created, its text taken from that revision (alembic loaded it).
    guard = op.get_context().script.get_revision("0001").module.GUARD
    op.execute(
        """
    drop function inbox_prune_preview(float8);
    drop function inbox_prune(float8, text, text);
    create or replace function """
        + guard
        + "    "  # the released text, to its last byte
    )
