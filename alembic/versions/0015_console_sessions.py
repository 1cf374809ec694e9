"""The console's sessions, kept in the database so that signing out ends one everywhere: a
signed cookie alone stays valid until it expires, whoever copied it."""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"


def upgrade() -> None:
    op.execute("""
    -- One row a signed-in console session (a password's or an `inbox dev` link's). The
    -- cookie holds a random token; the row holds only its SHA-256, so a role that reads
    -- the table cannot take over a session. `credential` is a digest of the user's role and
    -- password hash when they signed in: a change of either in the settings ends the
    -- session. Sign-out deletes the row; expired rows go at the next sign-in.
    create table inbox_console_sessions (
        id bytea primary key check (length(id) = 32),
        user_name text not null,
        via text not null check (via in ('password', 'dev')),
        credential bytea not null,
        created_at timestamptz not null default now(),
        seen_at timestamptz not null default now(),
        expires_at timestamptz not null
    );
    create index inbox_console_sessions_expiry on inbox_console_sessions (expires_at);
    """)


def downgrade() -> None:
    op.execute("""
    drop table inbox_console_sessions;
    """)
