"""Login roles holding one least-privilege group role each, in the test's database
(tests/_roles.py makes and drops them)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests._roles import Roles

__all__ = ["Roles"]


@pytest.fixture
def roles(db_url: str) -> Iterator[Roles]:
    made = Roles.random(db_url)
    with psycopg.connect(db_url, autocommit=True) as conn:
        made.create(conn)
    try:
        yield made
    finally:
        with psycopg.connect(db_url, autocommit=True) as conn:
            made.drop(conn)
