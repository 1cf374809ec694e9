"""Replay: re-run stored events after a bug fix, and retry dead letters (the same thing).

A replay never mutates the log. It appends work rows (priority 1, so live work goes first)
and one run record (who, when, why, the filter, the counts); the normal workers run the
events with ``event.is_replay`` set, and each attempt records the run's id. Events that
already have pending work are left alone: replaying twice before the workers run queues
each event once.

A replay is one transaction on one REPEATABLE READ snapshot: the selection, its counts, the
sample and the enqueue all read the same state, so what the preview counted (and ``confirm``
was asked about) is what the run queues. When another transaction changes the selection's
work meanwhile, the enqueue fails rather than disagree, and the replay starts over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg import pq

from inbox._core.errors import RefusedError
from inbox._core.logs import get_logger
from inbox._operations.models import EventSummary
from inbox._operations.records import (
    Record,
    ReplayRun,
    Via,
    WorkerVersion,
    check_via,
    record_json,
)
from inbox._operations.replay_store import ReplayStore
from inbox._operations.selection import EventFilter
from inbox._operations.session import Db, connection, current_actor
from inbox._operations.store import LogStore

__all__ = [
    "ReplayResult",
    "ReplayRun",
    "SkipResult",
    "event_ids",
    "replay",
    "replay_runs",
    "retry_dead",
    "skip_dead",
]

log = get_logger("processors.replay")

CHUNK = 1000
# A work row of the selection that another transaction changes while a replay runs (a worker
# settling it, another replay) fails the replay's enqueue (replay_snapshot): it starts over
# on a fresh snapshot, at most this many times in all.
SNAPSHOT_TRIES = 5

Kind = Literal["replay", "dead-retry"]


# The JSON form's order (docs/operations.md): the run and its verdict before the counts.
_RESULT_FIELDS = (
    "replay_id",
    "dry_run",
    "cancelled",
    "selected",
    "queued",
    "already_pending",
    "already_processed",
    "required_version",
    "workers",
    "sample",
)


@dataclass(frozen=True, slots=True)
class ReplayResult(Record):
    """What a replay or a dead-letter retry queued (``replay``, ``retry_dead``), or with
    ``dry_run`` would queue."""

    selected: int
    """Events the selection matched."""
    queued: int
    """Events queued by this run (with ``dry_run``: that would be)."""
    already_pending: int
    """Selected events left alone because they already had pending work."""
    dry_run: bool
    replay_id: int | None = None
    """The run's id (None for a dry run or a cancelled one)."""
    cancelled: bool = False
    sample: list[EventSummary] = field(default_factory=list)
    already_processed: int = 0
    """Queued (or to be) events that ran successfully before: their handlers run again."""
    required_version: str | None = None
    """Only a worker running this version of the code runs the queued events."""
    workers: list[WorkerVersion] = field(default_factory=list)
    """The worker processes running when the replay was made, by version, newest first."""

    @property
    def warnings(self) -> list[str]:
        """What to know before the events run: workers of other versions than the fix."""
        if self.required_version is not None:
            if not any(w.version == self.required_version for w in self.workers):
                return [
                    f"no running worker has version {self.required_version}: the events wait"
                    " until one starts"
                ]
            return []
        if len(self.workers) > 1:
            return [
                f"workers run {len(self.workers)} versions of the code; any of them may run"
                " these events: deploy the fix to every worker first, or require its version"
                " (--require-version)"
            ]
        return []

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form: the fields, then ``warnings``."""
        return {**record_json(self, _RESULT_FIELDS), "warnings": self.warnings}


@dataclass(frozen=True, slots=True)
class SkipResult(Record):
    """What ``skip_dead`` did with each id it was given."""

    skip_id: int | None
    """The audit run's id (None when none of the ids was a dead letter)."""
    skipped: list[int]
    """The dead letters that left the work table as skipped."""
    left_alone: list[int]
    """Ids that were not dead letters (pending, settled or unknown): nothing was done."""


def event_ids(db: Db, event_filter: EventFilter) -> list[int]:
    """Every id the filter selects, oldest first (what a replay enqueues)."""
    with connection(db, "select events") as conn:
        ids = LogStore(conn).select_ids(event_filter, limit=None)
    ids.reverse()
    return ids


def replay(
    db: Db,
    *,
    reason: str,
    ids: Sequence[int] | None = None,
    event_filter: EventFilter | None = None,
    dry_run: bool = False,
    rate: float | None = None,
    actor: str | None = None,
    via: Via = "api",
    confirm: Callable[[int], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    sample_size: int = 10,
    kind: Kind = "replay",
    include_processed: bool = True,
    require_version: str | None = None,
) -> ReplayResult:
    """Queue the selected events for the workers again, as one audited run.

    Select by ``ids``, by ``event_filter``, or both (both narrow). ``confirm(count)`` is
    asked before anything is written (return False to cancel); ``progress(n)`` is called
    as chunks of ``n`` events are queued. ``rate`` (events per second) spreads the run out.
    The run commits as a whole: all of its work and its record, or nothing.

    A replayed event's handler runs again, in a new claim transaction: for an event that
    was processed successfully before, its database writes happen a second time unless the
    handler is replay-safe (an upsert, or a check of ``event.is_replay``).
    ``result.already_processed`` counts those events; with ``include_processed=False``
    (what ``inbox replay`` does unless ``--include-processed``) a selection with any of
    them is refused (``RefusedError``) before anything is written.
    ``actor`` (default: ``user@host`` of this process) and ``via`` are recorded with it.

    ``require_version``: only a worker running that version of the code (``[app] version``,
    or the fingerprint ``inbox status`` shows) runs the queued events, so that workers still
    running the old code during a deploy leave them alone. ``result.workers`` says which
    versions are running, and ``result.warnings`` what that means for this run.
    """
    if not reason or not reason.strip():
        raise RefusedError("a replay needs a reason (it is recorded with the run)", action="replay")
    if ids is None and event_filter is None:
        raise RefusedError(
            "a replay needs event ids or a filter; to select every event, pass an empty"
            " EventFilter() explicitly (CLI: --all)",
            action="replay",
        )
    if rate is not None and rate <= 0:
        raise ValueError("rate must be a positive number of events per second")
    if require_version is not None and not 0 < len(require_version.strip()) <= 200:
        raise RefusedError(
            "a required version is 1 to 200 characters (what `inbox status` shows)",
            action="replay",
        )
    check_via(via)
    selection = event_filter or EventFilter()
    if ids is not None:
        selection = replace(selection, ids=tuple(ids))
    run = _Run(
        selection=selection,
        reason=reason.strip(),
        dry_run=dry_run,
        rate=rate,
        actor=actor,
        via=via,
        confirm=confirm,
        progress=progress,
        sample_size=sample_size,
        kind=kind,
        include_processed=include_processed,
        required_version=require_version.strip() if require_version else None,
    )
    for attempt in range(1, SNAPSHOT_TRIES + 1):
        ours = False
        try:
            with _one_transaction(db) as (conn, ours):
                result = run.once(conn)
        except psycopg.errors.SerializationFailure:
            # Only a transaction of our own can start over; a caller's is aborted.
            if not ours or attempt == SNAPSHOT_TRIES:
                raise RefusedError(
                    f"the selected events' work changed while the replay ran ({attempt}"
                    " tries: workers or another replay are settling them); nothing was"
                    " queued. Run it again, or narrow the selection",
                    action="replay",
                ) from None
            log.info("replay_snapshot_retry", attempt=attempt, kind=kind, via=via)
            continue
        if result.replay_id is not None:
            log.info(
                "replay_enqueued",
                replay_id=result.replay_id,
                kind=kind,
                via=via,
                selected=result.selected,
                queued=result.queued,
                reason=reason,
            )
        return result
    raise AssertionError("unreachable: the last try returns or raises")


@contextmanager
def _one_transaction(db: Db) -> Iterator[tuple[psycopg.Connection[Any], bool]]:
    """The replay's one transaction, and whether it is its own (``db`` is a URL, or an
    idle connection): then it reads one REPEATABLE READ snapshot. In a caller's open
    transaction it runs in a savepoint, at the caller's isolation level."""
    with connection(db, "replay events") as conn:
        ours = conn.info.transaction_status == pq.TransactionStatus.IDLE
        with conn.transaction():
            if ours:
                ReplayStore(conn).begin_snapshot()
            yield conn, ours


@dataclass(frozen=True, slots=True)
class _Run:
    """One replay's request; ``once`` runs it in the transaction it is given."""

    selection: EventFilter
    reason: str
    dry_run: bool
    rate: float | None
    actor: str | None
    via: Via
    confirm: Callable[[int], bool] | None
    progress: Callable[[int], None] | None
    sample_size: int
    kind: Kind
    include_processed: bool
    required_version: str | None

    def once(self, conn: psycopg.Connection[Any]) -> ReplayResult:
        store = ReplayStore(conn)
        selected = event_ids(conn, self.selection)  # oldest first: a run replays in order
        queue, processed = store.to_queue(selected)
        log_store = LogStore(conn)
        # The newest of the first few, as an events page lists them.
        sample = log_store.summaries(selected[: self.sample_size][::-1])
        preview = ReplayResult(
            selected=len(selected),
            queued=len(queue),
            already_pending=len(selected) - len(queue),
            dry_run=self.dry_run,
            sample=sample,
            already_processed=processed,
            required_version=self.required_version,
            workers=log_store.running_workers(),
        )
        if self.dry_run or not selected:
            return preview
        if processed and not self.include_processed:
            raise RefusedError(
                f"{processed} of the {len(selected)} selected events were processed"
                " successfully before, and a replay runs their handlers again: their database"
                " writes happen again unless the handlers are replay-safe (an upsert, or a"
                " check of event.is_replay; see docs/operations.md). Pass"
                " include_processed=True (CLI: --include-processed) to go ahead, or narrow"
                " the selection (--state dead)",
                action="replay",
            )
        if self.confirm is not None and not self.confirm(len(selected)):
            return replace(preview, queued=0, cancelled=True)

        replay_id = store.begin_run(
            ReplayRun(
                id=0,  # drawn by the database
                kind=self.kind,
                created_at=datetime.now().astimezone(),
                created_by=self.actor or current_actor(),
                reason=self.reason,
                filter=self.selection.to_json(),
                selected=len(selected),
                queued=len(queue),
                rate_per_second=self.rate,
                via=self.via,
                required_version=self.required_version,
            )
        )
        if self.progress is not None and len(queue) < len(selected):
            self.progress(len(selected) - len(queue))  # already pending: left as they are
        queued = 0
        for offset in range(0, len(queue), CHUNK):
            chunk = queue[offset : offset + CHUNK]
            queued += store.enqueue(replay_id, chunk, offset)
            if self.progress is not None:
                self.progress(len(chunk))
        store.wake_workers()
        return replace(
            preview,
            queued=queued,
            already_pending=len(selected) - queued,
            replay_id=replay_id,
        )


def retry_dead(
    db: Db,
    *,
    reason: str,
    ids: Sequence[int] | None = None,
    event_filter: EventFilter | None = None,
    **options: Any,
) -> ReplayResult:
    """Retry dead letters (all of them, or those the ids/filter select): a replay of the
    dead state, recorded as a ``dead-retry`` run."""
    dead_only = replace(event_filter or EventFilter(), states=("dead",))
    return replay(db, reason=reason, ids=ids, event_filter=dead_only, kind="dead-retry", **options)


def replay_runs(db: Db, *, limit: int = 20) -> list[ReplayRun]:
    """The most recent replay runs, newest first."""
    with connection(db, "list replay runs") as conn:
        return ReplayStore(conn).runs(limit)


def skip_dead(
    db: Db,
    *,
    ids: Sequence[int],
    reason: str,
    actor: str | None = None,
    via: Via = "api",
) -> SkipResult:
    """Skip dead letters: each leaves the work table with a 'skipped' attempt, unprocessed,
    and a key it held (``on_dead = "hold"``) goes on with its next event. Recorded as one
    audited 'dead-skip' run (who, why, which ids); ids that are not dead letters are left
    alone. The handler never runs: what the event should have done is the operator's call.
    """
    if not reason or not reason.strip():
        raise RefusedError("a skip needs a reason (it is recorded)", action="dead skip")
    if not ids:
        raise RefusedError("skip which dead letters? give their event ids", action="dead skip")
    check_via(via)
    who = actor or current_actor()
    with connection(db, "skip dead letters") as conn, conn.transaction():
        skip_id, skipped = ReplayStore(conn).skip_dead(ids, who, reason.strip(), via)
    log.info("dead_skipped", skip_id=skip_id, via=via, skipped=len(skipped), reason=reason)
    done = set(skipped)
    return SkipResult(skip_id, skipped, sorted({i for i in ids if i not in done}))
