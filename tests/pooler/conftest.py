"""Every test here runs its code under test through PgBouncer in transaction mode.

One PgBouncer for the session (tests/_pgbouncer.py) in front of the suite's server. Here
``receiver_url`` and ``worker_url`` go through it, and the environment says ``[database]
pooler = "transaction"``, with the worker's ``listen_url`` the direct URL (a test that
wants none removes it), so that the parts in this process and the ``inbox`` commands a test
starts run as a deployment behind a transaction pooler does. ``db_url`` stays direct: set-up
and assertions never go through the pooler.

The receiver's and the worker's fixtures are imported from their folders: their tests
collected again here use them as they are.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inbox._core.database.roles import PARTS
from tests._pgbouncer import PgBouncer, running_pgbouncer
from tests._roles import Roles, part_url
from tests.processors.test_faults import workers  # noqa: F401 (a fixture, here too)
from tests.receiver.conftest import make_settings, rsa_pair  # noqa: F401 (fixtures, here too)
from tests.receiver.test_receiver_asgi import client, settings  # noqa: F401 (fixtures, here too)
from tests.receiver.test_receiver_cli import served  # noqa: F401 (a fixture, here too)


@pytest.fixture(scope="session")
def pgbouncer(pg_server: str, least_roles: Roles | None) -> Iterator[PgBouncer]:
    logins = [least_roles.login(part) for part in PARTS] if least_roles is not None else []
    with running_pgbouncer(pg_server, users=logins) as bouncer:
        yield bouncer


@pytest.fixture
def direct_worker_url(db_url: str, least_roles: Roles | None) -> str:
    """The worker's URL, not through the pooler: its ``listen_url``."""
    return part_url(db_url, least_roles, "worker")


@pytest.fixture
def receiver_url(receiver_url: str, pgbouncer: PgBouncer) -> str:
    return pgbouncer.pooled(receiver_url)


@pytest.fixture
def worker_url(worker_url: str, pgbouncer: PgBouncer) -> str:
    return pgbouncer.pooled(worker_url)


@pytest.fixture(autouse=True)
def behind_the_pooler(monkeypatch: pytest.MonkeyPatch, direct_worker_url: str) -> None:
    monkeypatch.setenv("INBOX_DATABASE__POOLER", "transaction")
    monkeypatch.setenv("INBOX_DATABASE__LISTEN_URL", direct_worker_url)
