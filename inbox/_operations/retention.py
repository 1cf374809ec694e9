"""Retention: removing old events through the audited path (``inbox prune``).

The log is append-only and partitioned by receipt time; the one way out is the
``inbox_prune`` function (migration 0013), which drops whole partitions older than the
cutoff, with their attempts and that period's deliveries, and records who did it. The
database holds the minimum retention (``[retention] minimum_days``, set by ``inbox db
upgrade``) and refuses anything under it, whoever asks.
"""

from __future__ import annotations

from datetime import timedelta

from inbox._core.errors import RefusedError
from inbox._core.logs import get_logger
from inbox._operations.models import PruneResult
from inbox._operations.records import Via, check_via
from inbox._operations.session import Db, connection, current_actor
from inbox._operations.store import LogStore
from inbox._operations.term import human_duration

__all__ = ["MINIMUM_RETENTION", "prune"]

log = get_logger("inbox.queries")

MINIMUM_RETENTION = timedelta(days=7)
"""The shortest ``older_than`` that ``prune`` accepts by default (its ``minimum``): a pruned
event can no longer be inspected or replayed (its key stays, for dedupe), and a week is what
someone on call needs to look back on."""


def prune(
    db: Db,
    older_than: timedelta,
    *,
    minimum: timedelta = MINIMUM_RETENTION,
    dry_run: bool = False,
    actor: str | None = None,
    via: Via = "api",
) -> PruneResult:
    """Remove the partitions of the log whose period ended more than ``older_than`` ago,
    with their attempts and that period's deliveries, through the audited retention path.
    A partition with an event that still has work (pending, retrying or dead) is kept
    whole, and named in the result. Keys stay (inbox_keys), so dedupe outlives the log.
    Refuses an ``older_than`` below ``minimum`` (and the database refuses one below its
    own, whatever ``minimum`` says): a pruned event can no longer be inspected or
    replayed. ``actor`` (default: ``user@host`` of this process) and ``via`` are recorded
    in the audit.
    """
    import psycopg

    check_via(via)
    if older_than < minimum:
        raise RefusedError(
            "refusing to prune events younger than the minimum retention of"
            f" {human_duration(minimum.total_seconds())} (asked for"
            f" {human_duration(older_than.total_seconds())}): a pruned event can no longer be"
            " inspected or replayed. Prune older events.",
            action="prune",
        )
    try:
        with connection(db, "prune the inbox") as conn:
            store = LogStore(conn)
            if dry_run:
                return store.prune_preview(older_than.total_seconds())
            with conn.transaction():
                result = store.prune(older_than.total_seconds(), actor or current_actor(), via)
            with conn.transaction():
                store.drop_pruned()
            cutoff = result.cutoff
    except psycopg.errors.InvalidParameterValue as exc:
        # The database's own minimum ([retention] minimum_days as `inbox db upgrade` set it).
        raise RefusedError(
            f"{exc.diag.message_primary} (the database's minimum, from [retention]"
            " minimum_days as `inbox db upgrade` last set it)",
            action="prune",
        ) from exc
    log.info(
        "inbox_pruned",
        cutoff=cutoff.isoformat(),
        events=result.events_deleted,
        kept=result.events_kept,
        partitions_dropped=[p.partition for p in result.partitions_dropped],
        partitions_kept=[p.partition for p in result.partitions_kept],
        audit_id=result.audit_id,
    )
    return result
