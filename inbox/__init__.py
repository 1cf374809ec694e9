"""pg-inbox, the receiving side: append signed webhooks to a durable PostgreSQL inbox.

This package never imports ``processors``: the writer embeds in web apps that run no workers.
"""

from typing import TYPE_CHECKING, Any

from inbox._errors import (
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
from inbox._lazy import load_lazily, own_exports
from inbox._settings import Settings, SourceSettings, load_settings
from inbox._write_plan import WriteResult
from inbox._writer import InboxWriter
from inbox._writer_async import AsyncInboxWriter

if TYPE_CHECKING:
    from inbox._asgi import create_app
    from inbox._metrics import ReceiverMetrics
    from inbox._receiver_core import Receiver, ReceiverResponse

# The receiver's names pull in Starlette, prometheus-client and the verifiers: an app that
# only embeds the writer should not pay for them, so they load on first use.
_LAZY = {
    "create_app": "inbox._asgi",
    "ReceiverMetrics": "inbox._metrics",
    "Receiver": "inbox._receiver_core",
    "ReceiverResponse": "inbox._receiver_core",
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
    "Receiver",
    "ReceiverMetrics",
    "ReceiverResponse",
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
