"""Over many partitions of the log, a lookup by id, by key or by SOURCE:KEY reads one: the
key table gives the event's receipt time, and the plan prunes every other partition when
it runs. (The other plans: test_query_plans.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from inbox._core.sql import load_queries
from inbox.testing import new_database
from tests._log import seed_events

DAYS = 40
PER_DAY = 50
OPERATOR = load_queries("inbox.sql", "operator.sql")
PROCESSORS = load_queries("processors.sql", "queries.sql")


@pytest.fixture(scope="module")
def many_partitions(pg_server: str, template_db: str) -> Iterator[str]:
    with new_database(pg_server, template=template_db, prefix="inbox_parts") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("update inbox_retention set partition = 'day'")
            seed_events(
                conn,
                "select 'source' || (g %% 3) as source, 'evt_' || g as idempotency_key,"
                " now() - make_interval(hours => g * 24 / %(per_day)s) as received_at,"
                " '{}' as body from generate_series(1, %(n)s) g",
                {"per_day": PER_DAY, "n": DAYS * PER_DAY},
            )
            conn.execute(
                "insert into inbox_work (event_id, received_at)"
                " select id, received_at from inbox_events where id % 10 = 0"
            )
            conn.execute("vacuum analyze")
        yield url


def _executed_partitions(url: str, query: str, params: dict[str, Any]) -> list[str]:
    """The partitions of inbox_events the statement really read (EXPLAIN ANALYZE)."""
    with psycopg.connect(url) as conn:
        [plan] = conn.execute(
            "explain (analyze, format json) " + query,  # type: ignore[operator]
            params,
        ).fetchone() or [None]
        conn.rollback()
    document = plan if isinstance(plan, list) else json.loads(plan)

    def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in node.get("Plans", []):
            yield from walk(child)

    return [
        n["Relation Name"]
        for n in walk(document[0]["Plan"])
        if n.get("Relation Name", "").startswith("inbox_events_") and n.get("Actual Loops")
    ]


def test_the_log_has_many_partitions(many_partitions: str) -> None:
    with psycopg.connect(many_partitions) as conn:
        [(count,)] = conn.execute("select count(*) from inbox_partitions").fetchall()
    assert count > 30


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("event_by_id", {"id": 1234}),
        ("event_by_key", {"source": "source1", "key": "evt_1234"}),
    ],
)
def test_a_lookup_reads_one_partition(many_partitions: str, name: str, params: Any) -> None:
    assert len(_executed_partitions(many_partitions, OPERATOR[name], params)) == 1


@pytest.mark.parametrize(
    "params",
    [
        {"id": 1234, "source": None, "source_key": None, "key": None, "limit": 20},
        {"id": None, "source": "source1", "source_key": "evt_1234", "key": None, "limit": 20},
        {"id": None, "source": None, "source_key": None, "key": "evt_1234", "limit": 20},
    ],
    ids=["id", "SOURCE:KEY", "key alone"],
)
def test_a_search_reads_one_partition(many_partitions: str, params: Any) -> None:
    assert len(_executed_partitions(many_partitions, OPERATOR["search_events"], params)) == 1


def test_the_claim_reads_only_the_partitions_of_the_events_it_claims(
    many_partitions: str,
) -> None:
    from processors._claiming.cursor import claim_params

    read = _executed_partitions(many_partitions, PROCESSORS["claim_batch"], claim_params(20))
    # 20 claimed events, oldest first, 5 a day: their 4 days' partitions, not all 40.
    assert 1 <= len(set(read)) <= 5
