"""The receiver tests' code under test logs in as the receiver's least role when the suite
runs in least-roles mode (``INBOX_TEST_ROLES=least``), and as the admin otherwise."""

from __future__ import annotations

import psycopg
import pytest

from tests._roles import Roles


def test_the_receiver_url_logs_in_as_the_mode_says(
    db_url: str, receiver_url: str, least_roles: Roles | None
) -> None:
    if least_roles is None:
        assert receiver_url == db_url
        return
    with psycopg.connect(receiver_url) as conn:
        assert conn.execute("select current_user").fetchone() == (least_roles.login("receiver"),)
        assert conn.execute("select current_database()").fetchone() == (
            psycopg.conninfo.conninfo_to_dict(db_url)["dbname"],
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select body from inbox_events")
