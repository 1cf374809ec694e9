"""The worker tests' code under test logs in as the worker's least role when the suite runs
in least-roles mode (``INBOX_TEST_ROLES=least``), and as the admin otherwise."""

from __future__ import annotations

import psycopg
import pytest

from tests._roles import Roles


def test_the_worker_url_logs_in_as_the_mode_says(
    db_url: str, worker_url: str, least_roles: Roles | None
) -> None:
    if least_roles is None:
        assert worker_url == db_url
        return
    with psycopg.connect(worker_url) as conn:
        assert conn.execute("select current_user").fetchone() == (least_roles.login("worker"),)
        # the business tables a test makes later are the worker's to write (default
        # privileges), the log is not
        conn.execute("select count(*) from inbox_events")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("insert into inbox_events (source, idempotency_key) values ('x', 'y')")
