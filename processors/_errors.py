"""The processing side's errors, rooted in ``inbox.InboxError`` (the tree is drawn in
``inbox._core.errors``).

They name what went wrong with an event when the fault is not the handler's own exception:
a deadline passed, a handler swallowed a failed statement, no handler is routed, the
connection broke during COMMIT. The worker records them as an attempt's ``error_class``;
a ``Retry`` is a request, not an error, and stays outside this tree.
"""

from __future__ import annotations

from inbox._core.errors import InboxError

__all__ = ["ProcessingError"]


class ProcessingError(InboxError):
    """The root of the errors the processing side raises or records for an event."""
