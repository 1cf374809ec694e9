"""A new work row of a role other than the owner is checked once per statement, not once per
row: its key must have been written in the same transaction (0016's rule, at a lower cost).
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"


def upgrade() -> None:
    op.execute("""
    -- After each statement that queues work, the rows it queued: each one that names no
    -- replay (which only the owner's audited functions write) must be its new event's, the
    -- key row that drew its id written in this transaction. One join, where 0016's row
    -- security looked each row's key up through SPI in a function of its own.
    create function inbox_check_new_work()
    returns trigger
    language plpgsql
    security definer
    as $$
    declare
        stray bigint;
    begin
        select n.event_id into stray
        from inbox_new_work n
        left join inbox_keys k
          on k.event_id = n.event_id and k.received_at = n.received_at
        where n.replay_id is null
          and (k.event_id is null or not inbox_written_here(k.xmin))
        limit 1;
        if found then
            raise exception 'pg-inbox: work for event % may be queued only with its new key',
                            stray
                using errcode = 'insufficient_privilege',
                      hint = 'a stored event is queued again by a replay, which is audited';
        end if;
        return null;
    end
    $$;
    revoke execute on function inbox_check_new_work() from public;

    -- The owner is not checked, as row security never checked it: it runs the migrations
    -- and the audited functions, and an owner's writer pays nothing for the check. Its
    -- name is the table owner's now; should the tables change hands, the new owner's
    -- writes are checked too (they pass: a new event's work, or a replay's).
    do $$
    begin
        execute format('alter function inbox_check_new_work() set search_path = %I, pg_temp',
                       current_schema());
        execute format(
            'create trigger inbox_work_checked after insert on inbox_work'
            ' referencing new table as inbox_new_work for each statement'
            ' when (current_user operator(pg_catalog.<>) %L)'
            ' execute function inbox_check_new_work()',
            (select pg_catalog.pg_get_userbyid(relowner) from pg_catalog.pg_class
             where oid = 'inbox_work'::regclass));
    end
    $$;

    drop policy inbox_work_queue on inbox_work;
    create policy inbox_work_queue on inbox_work for insert with check (true);
    """)


def downgrade() -> None:
    op.execute("""
    drop policy inbox_work_queue on inbox_work;
    create policy inbox_work_queue on inbox_work for insert
        with check (inbox_work_is_new(event_id, received_at));
    drop trigger inbox_work_checked on inbox_work;
    drop function inbox_check_new_work();
    """)
