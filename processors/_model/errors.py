"""The processing side's errors, rooted in ``inbox.InboxError`` (the tree is drawn in
``inbox._core.errors``).

They name what went wrong with an event when the fault is not the handler's own exception:
a deadline passed, a handler swallowed a failed statement, no handler is routed, the
connection broke during COMMIT. The worker records them as an attempt's ``error_class``;
a ``Retry`` is a request, not an error, and stays outside this tree.
"""

from __future__ import annotations

from inbox._core.errors import InboxError

__all__ = [
    "CommitOutcomeUnknownError",
    "HandlerLeftTransactionAbortedError",
    "HandlerTimeoutError",
    "NoRouteError",
    "ProcessingError",
]


class ProcessingError(InboxError):
    """The root of the errors the processing side raises or records for an event."""


class HandlerTimeoutError(ProcessingError):
    """The handler did not finish within its deadline."""


class HandlerLeftTransactionAbortedError(ProcessingError):
    """The handler returned normally after one of its statements failed: the transaction is
    aborted, so nothing it wrote can commit."""


class NoRouteError(ProcessingError):
    """No handler is routed for the event (with ``unrouted = "fail"``)."""


class CommitOutcomeUnknownError(ProcessingError):
    """The connection broke during a batch's COMMIT: whether ``event_ids`` were settled is
    unknown. The worker reconnects and reads which were; the others are claimable again,
    and none is run again blindly."""

    def __init__(self, event_ids: list[int]) -> None:
        self.event_ids = event_ids
        super().__init__(f"connection lost during COMMIT of {len(event_ids)} events")
