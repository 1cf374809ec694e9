"""The claiming room: what a claim loop takes from the work table, and what it writes back.

The store owns every query of the processing side (``store``: ``WorkStore``, over
processors/sql/queries.sql); a claim's rows become events in ``rows``; where the next claim
scans the claim index from is ``cursor``'s (``ClaimCursor``, I/O-free); a suspect runs alone
(``gate``).

May import: the model room, ``processors._compat`` and ``inbox._core``; never the running
room, which runs what is claimed (import-linter, pyproject.toml).
"""

__all__ = ["cursor", "gate", "rows", "store"]
