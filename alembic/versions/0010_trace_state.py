"""An event keeps the W3C tracestate of its receipt beside its traceparent, so a handler's
span links to the whole trace context a propagator passed on."""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    op.execute("""
    -- The W3C tracestate of the span that stored the event (vendors' entries that travel
    -- with its trace), beside its traceparent (0008); null when there was none. Handler
    -- spans link to both (docs/observability.md). The writers keep at most the 512
    -- characters W3C Trace Context asks a propagator to pass on, dropping entries as it
    -- says; the check keeps anything longer out.
    alter table inbox_events add column tracestate text
        constraint inbox_events_tracestate_length check (length(tracestate) <= 512);
    """)


def downgrade() -> None:
    op.execute("""
    alter table inbox_events drop column tracestate;
    """)
