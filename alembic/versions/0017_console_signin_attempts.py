"""The console's sign-in attempts, kept in the database so that every console process counts
against one limit: a count in each process's memory let ``inbox serve`` grant its budget
once per process."""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"


def upgrade() -> None:
    op.execute("""
    -- One row a sign-in attempt with a password, written before its password is checked and
    -- deleted when it succeeds: what is left within the window are the failures (and the
    -- attempts still being checked). The name is kept as its SHA-256 only: a name field is
    -- where a password gets typed by mistake, and the digest bounds the row. Rows older
    -- than the window go at the next attempt, from any address.
    create table inbox_console_signin_attempts (
        id bigint generated always as identity primary key,
        name_sha256 bytea not null check (length(name_sha256) = 32),
        address text not null,
        at timestamptz not null
    );
    create index inbox_console_signin_attempts_address
        on inbox_console_signin_attempts (address, at);
    create index inbox_console_signin_attempts_at on inbox_console_signin_attempts (at);
    """)


def downgrade() -> None:
    op.execute("""
    drop table inbox_console_signin_attempts;
    """)
