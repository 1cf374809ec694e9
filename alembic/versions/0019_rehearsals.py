"""Rehearsals: a replay run in transactions that roll back leaves one audit row, kind
'rehearsal', with what its events would have done. It queues nothing."""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"


def upgrade() -> None:
    op.execute(
        """
    alter table inbox_replays drop constraint inbox_replays_kind;
    alter table inbox_replays add constraint inbox_replays_kind
        check (kind in ('replay', 'dead-retry', 'dead-skip', 'rehearsal'));
    -- What a rehearsal's events would have done: counts by outcome.
    alter table inbox_replays add column outcome jsonb;

    -- A rehearsal writes one row here first in each of its transactions, which all roll
    -- back: should a handler commit anyway, the deferred trigger fails the COMMIT, and
    -- the transaction rolls back all the same. The table stays empty.
    create table inbox_rehearsal_guard (rehearsing boolean not null default true);
    create function inbox_rehearsal_refuse_commit() returns trigger
    language plpgsql
    as $$
    begin
        raise exception 'pg-inbox: a rehearsal never commits; its transaction rolls back'
            using errcode = 'read_only_sql_transaction';
    end
    $$;
    create constraint trigger inbox_rehearsal_refuse_commit
        after insert on inbox_rehearsal_guard
        deferrable initially deferred
        for each row execute function inbox_rehearsal_refuse_commit();

    -- A rehearsal's audit row (who says they ran it, the login that did, why, the
    -- selection, the counts); its id. It queues nothing.
    create function inbox_rehearsal_record(created_by text, reason text, filter jsonb,
                                           selected integer, outcome jsonb, via text)
    returns bigint
    language sql
    volatile
    security definer
    as $$
    insert into inbox_replays (kind, created_by, reason, filter, selected, queued, via, outcome)
    values ('rehearsal', inbox_rehearsal_record.created_by, inbox_rehearsal_record.reason,
            inbox_rehearsal_record.filter, inbox_rehearsal_record.selected, 0,
            inbox_rehearsal_record.via, inbox_rehearsal_record.outcome)
    returning id
    $$;
    revoke execute on function inbox_rehearsal_record(text, text, jsonb, integer, jsonb, text)
        from public;
    do $$
    begin
        execute format('alter function inbox_rehearsal_record(text, text, jsonb, integer,'
                       ' jsonb, text) set search_path = %I, pg_temp', current_schema());
    end
    $$;
    """
    )


def downgrade() -> None:
    op.execute("""
    -- The append-only audit keeps its rehearsal rows: the old check applies to new rows.
    drop function inbox_rehearsal_record(text, text, jsonb, integer, jsonb, text);
    drop table inbox_rehearsal_guard;
    drop function inbox_rehearsal_refuse_commit();
    alter table inbox_replays drop column outcome;
    alter table inbox_replays drop constraint inbox_replays_kind;
    alter table inbox_replays add constraint inbox_replays_kind
        check (kind in ('replay', 'dead-retry', 'dead-skip')) not valid;
    """)
