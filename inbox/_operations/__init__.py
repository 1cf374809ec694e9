"""The operations room: what an operator asks of the log, and what they do to it.

Owns the operator API's models and records (``models``, ``records``), its store of queries
(``store``), replay and dead-retry (``replay``), reading the receiver's rejection counters
(``receiver_scrape``) and terminal formatting (``term``). Its public face is
``inbox.queries`` (documented in docs/operations.md), which belongs to this room.

May import: the core room. Never receiving, writing or providers: an operator reads and
re-enqueues what is stored, never a request.
"""

__all__ = ["models", "receiver_scrape", "records", "replay", "store", "term"]
