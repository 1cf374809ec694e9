"""The audit records where a run was started from (the CLI, the console, the Python API);
indexes for the console: a replay run's attempts, a source's events in order, and the
time indexes widened so the overview counts from them alone."""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    op.execute("""
    -- `created_by` is `user@host` from the CLI and the API but a console user's name from the
    -- console: `via` says which, so "olga" the console user is not read as a login name.
    -- Rows written before this revision came from the CLI (the console did not exist).
    alter table inbox_replays add column via text not null default 'cli'
        constraint inbox_replays_via check (via in ('cli', 'console', 'api'));
    alter table inbox_prunes add column via text not null default 'cli'
        constraint inbox_prunes_via check (via in ('cli', 'console', 'api'));

    -- A run's progress (how many of its events were processed, failed, are pending) and the
    -- "replayed" filter read attempts by run. Only replayed attempts carry a run id, so the
    -- partial index stays a small fraction of the history.
    create index inbox_attempts_replay on inbox_attempts (replay_id, event_id)
        where replay_id is not null;

    -- The console's events page of one source, newest first: without this the page walks
    -- the whole log backwards to find a quiet source's events (1.5 s at 1,000,000 events
    -- when the source has none), with it the walk starts and stays within the source.
    create index inbox_events_source_id on inbox_events (source, id);

    -- The console's activity charts count a day of attempts by outcome: with the outcome in
    -- the time index they are counted from the index alone (the history is append-only, so
    -- its pages are all-visible once vacuumed), not fetched row by row from the table.
    drop index inbox_attempts_finished_at;
    create index inbox_attempts_finished_at on inbox_attempts (finished_at) include (outcome);
    -- Likewise the overview counts a day's events per source from the index alone (half
    -- of its time at 1,000,000 events went to fetching 33,000 rows for their source).
    drop index inbox_events_received_at;
    create index inbox_events_received_at on inbox_events (received_at) include (source);
    """)


def downgrade() -> None:
    op.execute("""
    drop index inbox_events_received_at;
    create index inbox_events_received_at on inbox_events (received_at);
    drop index inbox_attempts_finished_at;
    create index inbox_attempts_finished_at on inbox_attempts (finished_at);
    drop index inbox_events_source_id;
    drop index inbox_attempts_replay;
    alter table inbox_prunes drop column via;
    alter table inbox_replays drop column via;
    """)
