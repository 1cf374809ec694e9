"""The embedded default: reused between runs, one owner at a time, a clear error otherwise."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from inbox import EmbeddedPostgresError
from inbox._core.runtime.embedded import EmbeddedPostgres


def test_embedded_server_keeps_its_data_and_refuses_a_second_owner(server_dir: Path) -> None:
    first = EmbeddedPostgres(server_dir / "data")
    url = first.start()
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("create table kept (n int)")
            conn.execute("insert into kept values (42)")
        second = EmbeddedPostgres(server_dir / "data")
        with pytest.raises(EmbeddedPostgresError, match="in use by another process") as info:
            second.start()
        assert str(server_dir / "data") in str(info.value)
    finally:
        first.stop()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)  # stopped cleanly: nobody answers

    again = EmbeddedPostgres(server_dir / "data")
    with again as url_again, psycopg.connect(url_again) as conn:
        assert conn.execute("select n from kept").fetchall() == [(42,)]
