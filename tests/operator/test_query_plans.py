"""The console's queries stay index-driven on a large inbox.

The plans checked are those of the statements the operator API really sends: the calls run
on a connection with PostgreSQL's ``auto_explain`` loaded, which reports every statement's
plan back to the client as a notice. No plan may read inbox_events, inbox_attempts or
inbox_deliveries with a Seq Scan. The inbox is filled by the console benchmark's own fill
(20,000 events over 30 days, three attempts each) and analysed, so the planner chooses
with real statistics, as it would in production.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from benchmarks.console import fill
from inbox import queries
from inbox.queries import EventFilter
from inbox.testing import new_database

EVENTS = 20_000
BIG_TABLES = {"inbox_events", "inbox_attempts", "inbox_deliveries", "inbox_keys"}
# A partition this small (16 pages) may be read whole: its scans are not counted.
SMALL_PARTITION_BYTES = 16 * 8192


@pytest.fixture(scope="module")
def filled_url(pg_server: str, template_db: str) -> Iterator[str]:
    with new_database(pg_server, template=template_db, prefix="inbox_plans") as url:
        fill(url, events=EVENTS)
        yield url


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _plans(url: str, call: Callable[[psycopg.Connection[Any]], object]) -> list[dict[str, Any]]:
    """The plan of every statement ``call`` sends, as auto_explain reports it."""
    notices: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in (
            "load 'auto_explain'",
            "set auto_explain.log_min_duration = 0",
            "set auto_explain.log_format = 'json'",
            "set auto_explain.log_level = 'notice'",
        ):
            conn.execute(statement)  # type: ignore[arg-type]
        conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        call(conn)
        plans = [json.loads(n[n.index("{") :])["Plan"] for n in notices if "plan:" in n]
        assert plans, "auto_explain reported no plan"
        _name_the_roots(conn, plans)
    return plans


def _name_the_roots(conn: psycopg.Connection[Any], plans: list[dict[str, Any]]) -> None:
    """A partition's scan, and its index, by the names of the log's table and index; the
    scan of a partition of a few pages (one made ahead, empty; the deliveries of a quiet
    week) is marked: the planner rightly reads so little whole."""
    nodes = [n for plan in plans for n in _nodes(plan)]
    names = sorted(
        {n[k] for n in nodes for k in ("Relation Name", "Index Name") if n.get(k) is not None}
    )
    roots = {
        name: (root, empty)
        for name, root, empty in conn.execute(  # type: ignore[arg-type]
            "select n, coalesce(pg_partition_root(to_regclass(n))::text, n),"
            " pg_relation_size(to_regclass(n)) < %s"
            " from unnest(%s::text[]) as n",
            [SMALL_PARTITION_BYTES, names],
        ).fetchall()
    }
    for node in nodes:
        if node.get("Relation Name") is not None:
            node["Small Partition"] = roots[node["Relation Name"]][1]
        for key in ("Relation Name", "Index Name"):
            if node.get(key) is not None:
                node[key] = roots[node[key]][0]


def _scans(plans: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    """(node type, relation, index) of the scans of the big tables, each once (a partition's
    scan by the log's names: several partitions read alike count as one)."""
    found = [
        (n["Node Type"], n["Relation Name"], n.get("Index Name"))
        for plan in plans
        for n in _nodes(plan)
        if n.get("Relation Name") in BIG_TABLES and not n.get("Small Partition")
    ]
    return list(dict.fromkeys(found))


CALLS: dict[str, Callable[[psycopg.Connection[Any]], object]] = {
    "events, first page": lambda c: queries.events(c, limit=50),
    "events, deep page by cursor": lambda c: queries.events(
        c, limit=50, cursor=queries.EventPage([], 500).next_cursor
    ),
    "events, source and type glob": lambda c: queries.events(
        c, EventFilter(source="source007", type="invoice.*"), limit=50
    ),
    "events, received between": lambda c: queries.events(
        c, EventFilter(since=queries.parse_time("3d"), until=queries.parse_time("2d")), limit=50
    ),
    "dead letters": lambda c: queries.dead(c, limit=50),
    "events, replay-queued": lambda c: queries.events(c, EventFilter(states=("replay-queued",))),
    "search by id": lambda c: queries.search(c, "12345"),
    "search by SOURCE:KEY": lambda c: queries.search(c, "source045:evt_12345"),
    "search by key alone": lambda c: queries.search(c, "evt_12345"),
    "event detail": lambda c: queries.event(c, 12340),
    "event detail by SOURCE:KEY": lambda c: queries.event(c, "source040:evt_12340"),
    "a delivery's body": lambda c: queries.delivery_body(c, 12340, 1234),
    "activity, last hour": lambda c: queries.activity(c, queries.LAST_HOUR),
    "activity, last day": lambda c: queries.activity(c, queries.LAST_DAY),
    "overview": lambda c: queries.status(c),
    "replay progress": lambda c: queries.replay_progress(c, 1),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_no_sequential_scan_of_the_big_tables(filled_url: str, name: str) -> None:
    scans = _scans(_plans(filled_url, CALLS[name]))
    assert scans, f"{name}: reads none of the big tables?"
    assert [s for s in scans if s[0] == "Seq Scan"] == [], f"{name}: {scans}"


def test_the_search_by_key_probes_the_unique_index_once_per_source(filled_url: str) -> None:
    [search, *_summaries] = _plans(filled_url, CALLS["search by key alone"])
    keys = {index for _, table, index in _scans([search]) if table == "inbox_keys"}
    # the sources are skipped through on the key table's unique index, which leads with the
    # source, and the key is then probed in it; the log is only probed for the event found
    assert keys == {"inbox_keys_pkey"}


def test_the_activity_counts_come_from_the_time_indexes(filled_url: str) -> None:
    scans = _scans(_plans(filled_url, CALLS["activity, last day"]))
    assert sorted(scans) == [
        ("Index Only Scan", "inbox_attempts", "inbox_attempts_finished_at"),
        ("Index Only Scan", "inbox_events", "inbox_events_received_at"),
    ]


def test_the_overview_counts_a_day_of_events_from_the_index(filled_url: str) -> None:
    scans = _scans(_plans(filled_url, CALLS["overview"]))
    assert ("Index Only Scan", "inbox_events", "inbox_events_received_at") in scans


def test_the_events_page_walks_the_primary_key_backwards(filled_url: str) -> None:
    plans = _plans(filled_url, CALLS["events, deep page by cursor"])
    [select, *_] = plans
    # each partition's primary key, walked backwards (merged, newest first)
    assert {(n["Index Name"], n["Scan Direction"]) for n in _events(select)} == {
        ("inbox_events_pkey", "Backward")
    }


def test_a_source_s_page_walks_that_source_s_index(filled_url: str) -> None:
    [select, *_] = _plans(filled_url, CALLS["events, source and type glob"])
    assert {(n["Index Name"], n["Scan Direction"]) for n in _events(select)} == {
        ("inbox_events_source_id", "Backward")
    }


def test_dead_letters_are_found_from_the_work_table(filled_url: str) -> None:
    [select, *_] = _plans(filled_url, CALLS["dead letters"])
    relations = [n.get("Relation Name") for n in _nodes(select) if "Relation Name" in n]
    # the work table drives; the log is only probed by id for each dead letter
    assert relations[0] == "inbox_work"
    assert {n.get("Index Name") for n in _events(select)} == {"inbox_events_pkey"}


def _events(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The scans of the log's partitions of more than a few pages."""
    return [
        n
        for n in _nodes(plan)
        if n.get("Relation Name") == "inbox_events" and not n.get("Small Partition")
    ]
