"""The receiver's and the worker's code under test log in as their least roles when the
suite runs in least-roles mode (``INBOX_TEST_ROLES=least``; CI's third run includes this
file), and as the admin otherwise."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests._roles import Roles

# What each part's role must not do: the receiver never reads a body, the worker never
# appends to the log.
FORBIDDEN = {
    "receiver": "select body from inbox_events",
    "worker": "insert into inbox_events (source, idempotency_key) values ('x', 'y')",
}


@pytest.mark.parametrize("part", ["receiver", "worker"])
def test_a_parts_url_logs_in_as_the_mode_says(
    request: pytest.FixtureRequest, db_url: str, least_roles: Roles | None, part: str
) -> None:
    url = request.getfixturevalue(f"{part}_url")
    if least_roles is None:
        assert url == db_url
        return
    with psycopg.connect(url) as conn:
        assert conn.execute("select current_user, current_database()").fetchone() == (
            least_roles.login(part),
            conninfo_to_dict(db_url)["dbname"],
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(FORBIDDEN[part])
