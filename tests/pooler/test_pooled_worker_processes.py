"""Several ``inbox worker`` processes through PgBouncer in transaction mode.

Each claim loop holds two server connections at once (its claim transaction, and the
autocommit claim counters it commits before any handler runs), so the pool must hold two
per claim loop (docs/deploy.md): here three processes of two loops, 12 server connections
for their claims, with their heartbeats and partitions upkeep sharing the one left over.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inbox._core.database.roles import PARTS
from tests._pgbouncer import PgBouncer, running_pgbouncer
from tests._roles import Roles
from tests.processors import test_faults
from tests.processors._procs import WorkerProcess

LOOPS = 3 * 2


@pytest.fixture(scope="module")
def pgbouncer(pg_server: str, least_roles: Roles | None) -> Iterator[PgBouncer]:
    logins = [least_roles.login(part) for part in PARTS] if least_roles is not None else []
    with running_pgbouncer(pg_server, users=logins, pool_size=2 * LOOPS + 1) as bouncer:
        yield bouncer


@pytest.mark.slow
def test_three_worker_processes_share_the_backlog_exactly_once(
    db_url: str, worker_url: str, tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    test_faults.test_three_worker_processes_share_the_backlog_exactly_once(
        db_url, worker_url, tmp_path, workers
    )
