"""${message}"""

from __future__ import annotations

from alembic import op

## alembic reads the graph from these variables (branch_labels and depends_on default to
## none), so the docstring does not restate them and they are written only when given.
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
% if branch_labels:
branch_labels = ${repr(branch_labels)}
% endif
% if depends_on:
depends_on = ${repr(depends_on)}
% endif
## Once written, a revision's SQL is pinned: `python -m tests.test_migrations_pinned` (see there).


def upgrade() -> None:
    op.execute("""
    """)


def downgrade() -> None:
    op.execute("""
    """)
