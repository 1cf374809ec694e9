"""The code each worker runs: worker processes report their version, an attempt records the
version that ran it, and a replay may require one."""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"


def upgrade() -> None:
    op.execute("""
    -- One row per worker process, written when it starts: the version of the handlers it
    -- runs ([app] version, else a fingerprint of the handlers' source files) and since
    -- when. A row names a process by host and pid; the process is running while a
    -- connection of its own ("pg-inbox worker NAME/N") is (operators read both).
    create table inbox_workers (
        name        text primary key,
        version     text not null constraint inbox_workers_version_length
                    check (length(version) between 1 and 200),
        started_at  timestamptz not null default now(),
        stopped_at  timestamptz
    );

    -- Work that only a worker of this version may claim: a replay after a fix, so that a
    -- worker still running the old code during a rolling deploy leaves it alone.
    alter table inbox_work add column required_version text;
    -- The version that ran each attempt (null: recorded before versions were).
    alter table inbox_attempts add column version text;
    -- What the replay asked for.
    alter table inbox_replays add column required_version text;
    """)


def downgrade() -> None:
    op.execute("""
    alter table inbox_replays drop column required_version;
    alter table inbox_attempts drop column version;
    alter table inbox_work drop column required_version;
    drop table inbox_workers;
    """)
