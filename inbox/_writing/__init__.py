"""The writing room: append an event to the inbox, sync and async.

Owns the writers (``writer``, ``writer_async``) over their I/O-free base (``base``: arguments,
the plan of a write), the write plan (``plan``: statements and parameters) and group commit
(``groups``).

May import: the core room. Never the providers, receiving, operations, web or CLI rooms: a
web app that embeds only ``InboxWriter`` loads nothing else.
"""

__all__ = ["base", "groups", "plan", "writer", "writer_async"]
