"""An event keeps the trace context of its receipt, so a handler's span can link to it."""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    op.execute("""
    -- The W3C traceparent of the span that stored the event (the receiver's receipt span,
    -- or the host's span around an embedded writer); null when nothing was traced. Handler
    -- spans link to it, every attempt and replay alike (docs/observability.md). A
    -- traceparent is 55 characters today; the check leaves room for a later version's
    -- fields while keeping a caller from storing anything unbounded.
    alter table inbox_events add column traceparent text
        constraint inbox_events_traceparent_length check (length(traceparent) <= 256);
    """)


def downgrade() -> None:
    op.execute("""
    alter table inbox_events drop column traceparent;
    """)
