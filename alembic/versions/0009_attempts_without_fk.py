"""The history's attempts no longer carry a foreign key to the log: its check cost a row lock
on the event for every attempt written, which the log's other rules already make redundant."""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    op.execute("""
    -- A foreign key is checked with a KEY SHARE row lock on the referenced row: every attempt
    -- a batch settled locked its event in the log, a WAL record and a dirtied page of the
    -- log for each event processed. Draining a 1,000,000-event backlog (one worker, PostgreSQL
    -- 15) that was ~7 us of the server's ~32 us an event, and the settle statement's time
    -- went from 10.5 to 6.0 us an event without it (benchmarks/ANALYSIS.md).
    -- An attempt's event still always exists, by the rules that remain: an attempt is
    -- written only for an event that has a work row (the settle, holding that row locked,
    -- and the audited dead skip), a work row references its event (inbox_work's foreign key
    -- stays), the log is append-only (its guard trigger), and the one way to delete events,
    -- inbox_prune, takes only events without a work row and deletes their attempts in the
    -- same statement.
    alter table inbox_attempts drop constraint inbox_attempts_event_id_fkey;
    """)


def downgrade() -> None:
    op.execute("""
    alter table inbox_attempts
        add constraint inbox_attempts_event_id_fkey
        foreign key (event_id) references inbox_events (id);
    """)
