"""pg-inbox, the receiving side: append signed webhooks to a durable PostgreSQL inbox.

This package never imports ``processors``: the writer embeds in web apps that run no workers.
"""

from inbox._asgi import create_app
from inbox._errors import (
    ConfigError,
    DatabaseUnavailableError,
    EmbeddedPostgresError,
    EventNotFoundError,
    InboxError,
    InvalidWriteError,
    MigrationError,
    RefusedError,
    VerificationError,
)
from inbox._metrics import ReceiverMetrics
from inbox._receiver_core import Receiver, ReceiverResponse
from inbox._settings import Settings, SourceSettings, load_settings
from inbox._write_plan import WriteResult
from inbox._writer import InboxWriter
from inbox._writer_async import AsyncInboxWriter

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
    "Settings",
    "SourceSettings",
    "VerificationError",
    "WriteResult",
    "create_app",
    "load_settings",
]
