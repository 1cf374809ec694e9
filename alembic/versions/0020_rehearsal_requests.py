"""Rehearsals asked for in the console: the console has no handlers, so it queues a
request that a worker whose router handles the events' sources runs and reports on."""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"


def upgrade() -> None:
    op.execute(
        """
    -- The sources a worker process's router handles ('*': any source). The console asks
    -- for a rehearsal only while a worker that can run it is running.
    alter table inbox_workers add column sources text[];

    -- A rehearsal the console asked for, keyed by its audit row (kind 'rehearsal'). A
    -- worker takes it (state 'running'), counts the events it has done, and leaves the
    -- report. One still queued or running past its deadline counts as expired.
    create table inbox_rehearsal_requests (
        replay_id   bigint primary key references inbox_replays (id),
        event_ids   bigint[] not null,
        sources     text[] not null,
        -- The selection as the page that asked had it, to go back to its replay.
        form        jsonb not null,
        state       text not null default 'queued'
                    constraint inbox_rehearsal_requests_state
                    check (state in ('queued', 'running', 'done', 'failed', 'expired')),
        created_at  timestamptz not null default now(),
        deadline    timestamptz not null,
        worker      text,
        started_at  timestamptz,
        finished_at timestamptz,
        done        integer not null default 0,
        report      jsonb,
        error       text
    );
    create index inbox_rehearsal_requests_queued on inbox_rehearsal_requests (replay_id)
        where state = 'queued';

    -- Ask for a rehearsal: its audit row (who, the login that did, why, the selection,
    -- how many) and its request, due within timeout_seconds; the audit row's id.
    create function inbox_rehearsal_request(created_by text, reason text, filter jsonb,
                                            event_ids bigint[], form jsonb,
                                            timeout_seconds float8, via text)
    returns bigint
    language plpgsql
    volatile
    security definer
    as $$
    declare
        run_id bigint;
    begin
        insert into inbox_replays (kind, created_by, reason, filter, selected, queued, via)
        values ('rehearsal', inbox_rehearsal_request.created_by, inbox_rehearsal_request.reason,
                inbox_rehearsal_request.filter,
                cardinality(inbox_rehearsal_request.event_ids), 0, inbox_rehearsal_request.via)
        returning id into run_id;
        insert into inbox_rehearsal_requests (replay_id, event_ids, sources, form, deadline)
        values (run_id, inbox_rehearsal_request.event_ids,
                array(select distinct e.source from inbox_events e
                      where e.id = any(inbox_rehearsal_request.event_ids) order by 1),
                inbox_rehearsal_request.form,
                now() + make_interval(secs => inbox_rehearsal_request.timeout_seconds));
        return run_id;
    end
    $$;
    revoke execute on function inbox_rehearsal_request(text, text, jsonb, bigint[], jsonb,
                                                       float8, text) from public;
    do $$
    begin
        execute format('alter function inbox_rehearsal_request(text, text, jsonb, bigint[],'
                       ' jsonb, float8, text) set search_path = %I, pg_temp', current_schema());
    end
    $$;
    """
    )


def downgrade() -> None:
    op.execute("""
    drop function inbox_rehearsal_request(text, text, jsonb, bigint[], jsonb, float8, text);
    drop table inbox_rehearsal_requests;
    alter table inbox_workers drop column sources;
    """)
