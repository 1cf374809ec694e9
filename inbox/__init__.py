"""pg-inbox, the receiving side: append signed webhooks to a durable PostgreSQL inbox.

This package never imports ``processors``: the writer embeds in web apps that run no workers.
"""

from typing import TYPE_CHECKING, Any

from inbox._core.errors import (
    ConfigError,
    DatabaseUnavailableError,
    EmbeddedPostgresError,
    EventNotFoundError,
    InboxError,
    InvalidWriteError,
    MigrationError,
    RefusedError,
    ReplayNotFoundError,
    VerificationError,
)
from inbox._core.lazy import load_lazily, own_exports
from inbox._writing.plan import WriteResult
from inbox._writing.writer import InboxWriter
from inbox._writing.writer_async import AsyncInboxWriter

if TYPE_CHECKING:
    from inbox._core.config.settings import Settings, SourceSettings, load_settings
    from inbox._receiving.delivery import PendingWrite, ReceiverResponse, ReceivingSource
    from inbox._receiving.metrics import ReceiverMetrics
    from inbox._receiving.receiver import Receiver
    from inbox.contrib._asgi import create_app

# The receiver's names pull in Starlette, prometheus-client and the verifiers: an app that
# only embeds the writer should not pay for them, so they load on first use. (Its types are
# here for whoever calls a Receiver's steps: admit gives a ReceivingSource, prepare a
# PendingWrite, each step may give a ReceiverResponse.)
#
# Settings pull in pydantic-settings (docs/architecture.md, "What `import inbox` costs"): a
# writer given its URL never reads them.
_LAZY = {
    "Settings": "inbox._core.config.settings",
    "SourceSettings": "inbox._core.config.settings",
    "load_settings": "inbox._core.config.settings",
    "create_app": "inbox.contrib._asgi",
    "ReceiverMetrics": "inbox._receiving.metrics",
    "Receiver": "inbox._receiving.receiver",
    "ReceiverResponse": "inbox._receiving.delivery",
    "ReceivingSource": "inbox._receiving.delivery",
    "PendingWrite": "inbox._receiving.delivery",
}


def __getattr__(name: str) -> Any:
    return load_lazily(globals(), _LAZY, name)


__all__ = [
    "AsyncInboxWriter",
    "ConfigError",
    "DatabaseUnavailableError",
    "EmbeddedPostgresError",
    "EventNotFoundError",
    "InboxError",
    "InboxWriter",
    "InvalidWriteError",
    "MigrationError",
    "PendingWrite",
    "Receiver",
    "ReceiverMetrics",
    "ReceiverResponse",
    "ReceivingSource",
    "RefusedError",
    "ReplayNotFoundError",
    "Settings",
    "SourceSettings",
    "VerificationError",
    "WriteResult",
    "create_app",
    "load_settings",
]

own_exports(globals())
