"""What a part does differently behind a transaction pooler, against a real PostgreSQL
(the pooler itself, PgBouncer, is in tests/pooler)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import psycopg
import pytest

from inbox import DatabaseUnavailableError, InboxWriter
from inbox._core.database.db import translate_driver_errors
from inbox._core.database.pooler import behind_pooler, looks_pooled


@pytest.mark.parametrize(
    ("url", "pooled"),
    [
        ("postgresql://u@db.example.com:6432/app", True),
        ("postgresql://postgres.abc:pw@aws-0-eu.pooler.supabase.com:6543/postgres", True),
        ("postgresql://u@ep-cool-1234-pooler.eu-central-1.aws.neon.tech/db", True),
        ("postgresql://u@app.proxy-abc.eu-west-1.rds.amazonaws.com:5432/db", True),
        ("host=a,b port=5432,6432 dbname=app", True),
        ("postgresql://u@db.example.com:5432/app", False),
        ("postgresql://u@ep-cool-1234.eu-central-1.aws.neon.tech/db", False),
        ("not a url at all", False),
    ],
)
def test_auto_takes_a_url_for_a_poolers_by_its_conventions(url: str, pooled: bool) -> None:
    assert looks_pooled(url) is pooled
    assert behind_pooler("auto", url) is pooled
    assert behind_pooler("transaction", url) is True
    assert behind_pooler("none", url) is False


def test_a_prepared_statement_gone_is_an_outage_that_names_the_setting() -> None:
    with (
        pytest.raises(DatabaseUnavailableError, match=r'pooler = "transaction"') as caught,
        translate_driver_errors("writing shop:k"),
    ):
        raise psycopg.errors.InvalidSqlStatementName('prepared statement "_pg3_0" does not exist')
    assert "InvalidSqlStatementName" in str(caught.value)
    with (
        pytest.raises(DatabaseUnavailableError, match=r'pooler = "transaction"'),
        translate_driver_errors("writing shop:k"),
    ):
        raise psycopg.errors.DuplicatePreparedStatement(
            'prepared statement "_pg3_0" already exists'
        )


def _session(writer: InboxWriter) -> tuple[str, int]:
    with writer._pool.connection() as conn:
        [(timeout, prepared)] = conn.execute(
            "select current_setting('statement_timeout'),"
            " (select count(*) from pg_prepared_statements)"
        ).fetchall()
    return str(timeout), int(prepared)


@pytest.mark.parametrize(
    ("pooler", "prepared", "prepares"),
    [
        ("none", "auto", True),
        ("transaction", "auto", False),
        ("transaction", "on", True),
        ("none", "off", False),
    ],
)
def test_prepared_statements_follow_the_pooler_unless_told(
    db_url: str, pooler: Any, prepared: Any, prepares: bool
) -> None:
    """ "on" is for a pooler that keeps prepared statements per client (PgBouncer 1.21 and
    later), which no URL tells; "off" prepares nothing, even direct."""
    with InboxWriter(
        db_url, pooler=pooler, prepared_statements=prepared, min_size=1, max_size=1
    ) as writer:
        for n in range(8):  # past psycopg's threshold for preparing a statement
            writer.write("shop", f"k{n}", b"{}")
        assert (_session(writer)[1] > 0) is prepares


def test_the_worker_and_console_prepare_as_the_writers_do() -> None:
    from inbox._core.database.pooler import connect_kwargs

    never = {"prepare_threshold": None}
    assert [connect_kwargs(p, m) for p in (False, True) for m in ("auto", "on", "off")] == [
        {},
        {},
        never,
        never,
        {},
        never,
    ]


def test_an_unknown_prepared_statements_mode_is_refused(db_url: str) -> None:
    with pytest.raises(ValueError, match=r"prepared_statements=\.\.\.\) must be one of"):
        InboxWriter(db_url, prepared_statements="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize("pooler", ["none", "transaction"])
def test_a_writers_statement_timeout_holds_and_only_a_pooled_one_leaves_none(
    db_url: str, pooler: Any
) -> None:
    options: dict[str, Any] = {"min_size": 1, "max_size": 1, "statement_timeout_seconds": 0.5}
    with InboxWriter(db_url, pooler=pooler, **options) as writer:
        for n in range(8):  # past psycopg's threshold for preparing a statement
            writer.write("shop", f"k{n}", b"{}")
        # A pooled session keeps neither the timeout nor a prepared statement.
        timeout, prepared = _session(writer)
        if pooler == "transaction":
            assert (timeout, prepared) == ("0", 0)
        else:
            assert timeout == "500ms"
            assert prepared > 0
        # Either way the server bounds the write: one stuck behind another session's
        # uncommitted write of the same key is cancelled after the timeout.
        with psycopg.connect(db_url) as blocker:
            with InboxWriter(pool=None, dsn=db_url) as other:
                other.write("shop", "held", b"{}", conn=blocker)
            with pytest.raises(DatabaseUnavailableError, match="QueryCanceled"):
                writer.write("shop", "held", b"{}")
            blocker.rollback()
        assert writer.write("shop", "held", b"{}").is_new


def test_a_pooled_async_writer_groups_writes_and_leaves_nothing_behind(db_url: str) -> None:
    import asyncio

    from inbox import AsyncInboxWriter

    async def main() -> tuple[list[bool], tuple[str, int]]:
        async with AsyncInboxWriter(
            db_url, pooler="transaction", statement_timeout_seconds=2, min_size=2, max_size=2
        ) as writer:
            results = await asyncio.gather(
                *(writer.write("shop", f"k{n % 30}", b"{}") for n in range(60))
            )
            async with writer._pool.connection() as conn:
                cursor = await conn.execute(
                    "select current_setting('statement_timeout'),"
                    " (select count(*) from pg_prepared_statements)"
                )
                [(timeout, prepared)] = await cursor.fetchall()
        return [r.is_new for r in results], (str(timeout), int(prepared))

    new, session = asyncio.run(main())
    assert sorted(new) == [False] * 30 + [True] * 30
    assert session == ("0", 0)


def _round_trips(trace: str) -> int:
    """How often the client waited on the server in a libpq trace: each run of messages the
    frontend sent ('F') that the backend ('B') then answered. A message is a line that starts
    with its sender and length; a statement's text goes on over the lines after it."""
    senders = [m.group(1) for m in re.finditer(r"^([FB])\t\d+\t", trace, re.MULTILINE)]
    return sum(1 for before, now in itertools.pairwise(["B", *senders]) if before + now == "BF")


@pytest.mark.parametrize("pooler", ["none", "transaction"])
def test_a_write_is_one_round_trip_pooled_or_not(db_url: str, pooler: Any, tmp_path: Any) -> None:
    # Behind a pooler the statement timeout goes with each write, in the same round trip.
    # No wake-ups: their NOTIFY would share the one connection, when the coalescer says.
    options: dict[str, Any] = {
        "min_size": 1,
        "max_size": 1,
        "statement_timeout_seconds": 2,
        "notify": "off",
    }
    path = tmp_path / "trace"
    with InboxWriter(db_url, pooler=pooler, **options) as writer, open(path, "w") as sink:
        writer.write("shop", "warm", b"{}")  # the partition is known from here on
        with writer._pool.connection() as conn:
            conn.pgconn.trace(sink.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        new = writer.write("shop", "k1", b"{}")
        again = writer.write("shop", "k1", b"{}")
        with writer._pool.connection() as conn:
            conn.pgconn.untrace()
    trace = path.read_text()
    assert (new.is_new, again.is_new) == (True, False)
    assert ("set_config" in trace) == (pooler == "transaction")
    assert _round_trips(trace) == 2, trace


def test_a_pooled_async_write_is_one_round_trip(db_url: str, tmp_path: Any) -> None:
    import asyncio

    from inbox import AsyncInboxWriter

    path = tmp_path / "trace"

    async def main() -> tuple[bool, bool]:
        async with AsyncInboxWriter(
            db_url,
            pooler="transaction",
            statement_timeout_seconds=2,
            min_size=1,
            max_size=1,
            notify="off",
        ) as writer:
            await writer.write("shop", "warm", b"{}")
            with open(path, "w") as sink:  # noqa: ASYNC230 - libpq writes to it, not us
                async with writer._pool.connection() as conn:
                    conn.pgconn.trace(sink.fileno())
                    conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                new = await writer.write("shop", "k1", b"{}")
                again = await writer.write("shop", "k1", b"{}")
                async with writer._pool.connection() as conn:
                    conn.pgconn.untrace()
        return new.is_new, again.is_new

    assert asyncio.run(main()) == (True, False)
    trace = path.read_text()
    assert "set_config" in trace
    assert _round_trips(trace) == 2, trace
