"""A failed attempt keeps a bounded traceback, so an operator can see where a handler failed."""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    op.execute("""
    -- Filled for attempts that raised; the worker bounds its length before writing it, and
    -- the check keeps a future caller from storing an unbounded one.
    alter table inbox_attempts add column error_traceback text
        constraint inbox_attempts_traceback_length check (length(error_traceback) <= 16384);
    """)


def downgrade() -> None:
    op.execute("""
    alter table inbox_attempts drop column error_traceback;
    """)
