"""The operations room: what an operator asks of the log, and what they do to it.

Owns the operator API's records (``models``: events and status; ``records``: runs, time, and
the JSON form every record shares), what selects events (``selection``: ``EventFilter``),
where and as whom an operation runs (``session``), the operator's input forms (``inputs``:
durations, times, page sizes), its store of queries (``store``), replay and dead-retry
(``replay``, over the queries of ``replay_store``), retention (``retention``), reading the
receiver's rejection counters (``receiver_scrape``) and terminal formatting (``term``). Its
public face is ``inbox.queries`` (documented in docs/operations.md), which sits above this
room: nothing here imports it.

May import: the core room. Never receiving, writing or providers: an operator reads and
re-enqueues what is stored, never a request.
"""

__all__ = [
    "inputs",
    "models",
    "receiver_scrape",
    "records",
    "replay",
    "replay_store",
    "retention",
    "selection",
    "session",
    "store",
    "term",
]
