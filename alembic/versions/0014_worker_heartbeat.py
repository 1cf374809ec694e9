"""Worker processes say they run every few seconds: behind a transaction pooler, the
server's sessions do not show which client they serve, so connections alone cannot tell."""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"


def upgrade() -> None:
    op.execute("""
    -- When the process last said it runs (processors._worker's heartbeat). Operators count
    -- a process as running while this is recent or a connection of its own is open.
    alter table inbox_workers add column seen_at timestamptz;
    """)


def downgrade() -> None:
    op.execute("""
    alter table inbox_workers drop column seen_at;
    """)
