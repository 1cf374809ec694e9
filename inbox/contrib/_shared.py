"""What the sync adapters share: the receiver's rules and a lazily opened writer."""

from __future__ import annotations

import threading

from inbox._core.config.settings import Settings
from inbox._core.errors import ConfigError
from inbox._receiving.receive import receiver_writer_kwargs
from inbox._receiving.receiver import Receiver
from inbox._writing.writer import InboxWriter

__all__ = ["SyncWriterSlot", "receiver_for"]


def receiver_for(settings: Settings, receiver: Receiver | None) -> Receiver:
    return receiver if receiver is not None else Receiver(settings)


class SyncWriterSlot:
    """The caller's writer, or one made from ``settings.database.url`` on the first request
    (not at import time: a URLconf is imported by management commands that never serve)."""

    def __init__(self, writer: InboxWriter | None, settings: Settings) -> None:
        if writer is None and not settings.database.url:
            raise ConfigError(
                "the webhook view needs a database: set [database] url or pass writer="
            )
        self._writer = writer
        self._settings = settings
        self._lock = threading.Lock()

    def get(self) -> InboxWriter:
        if self._writer is None:
            with self._lock:
                if self._writer is None:
                    self._writer = InboxWriter(
                        self._settings.database.url, **receiver_writer_kwargs(self._settings)
                    )
        return self._writer
