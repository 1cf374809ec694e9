"""The writing room: append an event to the inbox, sync and async.

Owns the writers (``writer``, ``writer_async``), the I/O-free write plan (``plan``: statements
and parameters) and group commit (``groups``).

May import: the core room. Never the providers, receiving, operations, web or CLI rooms: a
web app that embeds only ``InboxWriter`` loads nothing else.
"""

__all__ = ["groups", "plan", "writer", "writer_async"]
