"""The savepoints a batch's handlers run under (processors._running.batch): one shared by the whole
batch, or one per event, and how many events may run isolated in one transaction."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "BATCH_SAVEPOINT",
    "EVENT_SAVEPOINT",
    "MAX_ISOLATED",
    "NEXT_EVENT_SAVEPOINT",
    "UNDO_BATCH",
    "UNDO_EVENT",
    "SavepointMode",
]

SavepointMode = Literal["batch", "event"]

# The whole batch's savepoint. Undoing it also releases it, so the per-event savepoints that
# follow are not nested in it (nesting would cost one more subtransaction id).
BATCH_SAVEPOINT = "savepoint inbox_batch"
UNDO_BATCH = "rollback to savepoint inbox_batch; release savepoint inbox_batch"

# One round trip per event: the previous event's savepoint is released and the next one
# taken in a single simple-protocol message. The last one is never released: COMMIT keeps
# what it holds.
EVENT_SAVEPOINT = "savepoint inbox_handler"
NEXT_EVENT_SAVEPOINT = "release savepoint inbox_handler; savepoint inbox_handler"
UNDO_EVENT = "rollback to savepoint inbox_handler"

# Events run isolated, each in a subtransaction, in one batch at most. PostgreSQL caches 64
# subtransaction ids per transaction (PGPROC_MAX_CACHED_SUBXIDS); past that the transaction
# "overflows" and every session's snapshots must consult pg_subtrans, slowing the whole
# server. Released savepoints still count (undone ones do not), so after a failure the
# events past this many go back to the queue unrun, for the next batch.
MAX_ISOLATED = 64
