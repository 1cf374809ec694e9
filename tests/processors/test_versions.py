"""The code a worker runs: its version (``[app] version`` or a fingerprint of the handlers'
files), reported and recorded with each attempt; a replay that requires a version runs only
on workers of it; a traceback shows the lines that ran, not what is on disk now."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from inbox._operations.models import Status
from inbox._operations.replay import ReplayResult
from inbox.queries import EventFilter, replay, status
from processors import Event, Router
from processors._claiming.cursor import claim_params
from processors._claiming.store import CLAIM_BATCH
from processors._model.decide import bounded_traceback
from processors._worker.version import code_version
from processors._worker.worker import Worker
from processors.testing import run_pending
from tests._wait import rows, scalar, wait_for
from tests.processors._support import settings, write_events

HANDLERS = """\
from processors import Router

router = Router()


@router.on("shop", "*")
def handle(event, conn):
    raise ValueError("{message}")
"""


@pytest.fixture
def app_module(tmp_path: Path) -> Iterator[Callable[[str], Router]]:
    """Write and import ``versioned_app.py`` (again, as a new worker process would)."""
    file = tmp_path / "versioned_app.py"
    sys.path.insert(0, str(tmp_path))

    def load(message: str) -> Router:
        file.write_text(HANDLERS.format(message=message))
        sys.modules.pop("versioned_app", None)
        importlib.invalidate_caches()
        router: Router = importlib.import_module("versioned_app").router
        return router

    yield load
    sys.path.remove(str(tmp_path))
    sys.modules.pop("versioned_app", None)


def test_the_fingerprint_follows_the_handlers_code_and_the_app_version_wins(
    app_module: Callable[[str], Router],
) -> None:
    first = code_version(app_module("one"))
    assert first.source == "code"
    assert len(first.version) == 12
    assert [f.name for f in first.files] == ["versioned_app.py"]
    assert code_version(app_module("one")).version == first.version  # the same code
    assert code_version(app_module("two")).version != first.version
    assert code_version(app_module("two"), "deploy-4f1c").version == "deploy-4f1c"


def test_a_traceback_shows_the_code_that_ran_not_the_file_as_it_is_now(
    app_module: Callable[[str], Router], tmp_path: Path
) -> None:
    router = app_module("old line")
    code_version(router)  # what a worker does once its handlers are imported
    # The file changes under the running worker (a deploy, an editor).
    (tmp_path / "versioned_app.py").write_text(HANDLERS.format(message="NEW LINE"))
    handler = router.routes[0].handler
    try:
        handler(None, None)  # type: ignore[call-arg]
    except ValueError as exc:
        text = bounded_traceback(exc)
    assert 'raise ValueError("old line")' in text
    assert "NEW LINE" not in text


def _claimable(url: str, version: str | None) -> list[int]:
    with psycopg.connect(url) as conn:
        found = conn.execute(CLAIM_BATCH, claim_params(50, version=version)).fetchall()
        conn.rollback()
    return [row[0] for row in found if row[1] is not None]


def test_work_that_requires_a_version_is_claimed_only_by_a_worker_of_it(db_url: str) -> None:
    ids = write_events(db_url, 3)
    run_pending(db_url, Router(), settings=settings(unrouted="skip"))
    result = replay(db_url, reason="the fix", event_filter=EventFilter(), require_version="fixed")
    assert result.queued == 3
    assert result.required_version == "fixed"
    assert _claimable(db_url, "old") == []
    assert _claimable(db_url, None) == []
    assert sorted(_claimable(db_url, "fixed")) == ids
    assert rows(db_url, "select distinct required_version from inbox_replays") == [("fixed",)]


def _run_workers(url: str, workers: list[Worker], until: Callable[[], bool]) -> None:
    """Run ``workers`` together until ``until()`` holds (checked in a thread)."""

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for worker in workers:
                tg.start_soon(worker.run)
            try:
                with anyio.fail_after(60):
                    while not await anyio.to_thread.run_sync(until):  # noqa: ASYNC110
                        await anyio.sleep(0.02)
            finally:
                for worker in workers:
                    worker.request_stop()

    anyio.run(main)


def test_workers_report_their_versions_and_a_replay_runs_on_the_one_it_requires(
    db_url: str, worker_url: str
) -> None:
    ids = write_events(db_url, 40)
    ran: list[tuple[str, int]] = []
    router = Router()

    def make(version: str) -> Worker:
        mine = Router()

        @mine.on("shop", "*")
        def handle(event: Event, conn: psycopg.Connection) -> None:
            ran.append((version, event.id))

        return Worker(
            worker_url, mine, settings(batch_size=5), name=f"host:{version}", version=version
        )

    run_pending(db_url, router, settings=settings(unrouted="skip"))
    replay(db_url, reason="fixed", event_filter=EventFilter(), require_version="v2")
    seen: list[Status] = []
    previews: list[ReplayResult] = []

    def both_reported_and_done() -> bool:
        if not seen:
            current = status(db_url)
            if len(current.worker_versions) < 2:
                return False
            seen.append(current)
            previews.append(replay(db_url, reason="look", event_filter=EventFilter(), dry_run=True))
        return scalar(db_url, "select count(*) from inbox_work") == 0

    _run_workers(worker_url, [make("v1"), make("v2")], both_reported_and_done)

    assert sorted(ran) == [("v2", i) for i in ids]  # v1 ran none of them
    versions = rows(
        db_url, "select distinct version from inbox_attempts where replay_id is not null"
    )
    assert versions == [("v2",)]
    [current], [preview] = seen, previews
    assert sorted(v.version for v in current.worker_versions) == ["v1", "v2"]
    assert any("2 versions of the code" in w for w in current.warnings)
    assert sorted(v.version for v in preview.workers) == ["v1", "v2"]
    assert any("deploy the fix to every worker" in w for w in preview.warnings)
    # Once they stopped, they are not running any more.
    wait_for(lambda: status(db_url).worker_versions == [], timeout=10, what="no workers")
