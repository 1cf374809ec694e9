"""The receiving room: framework-free handling of one webhook request.

Owns the I/O-free receiver core (``receiver``: verify, extract, respond), running it against a
writer (``receive``), key and type extraction (``extract``), a source's verifier and extraction
built from its settings (``source_config``), signed sample requests for ``inbox send``
(``samples``) and the receiver's metrics (``metrics``).

May import: the providers, writing and core rooms. Never operations: receiving and operating
are sides that never meet.
"""

__all__ = ["extract", "metrics", "receive", "receiver", "samples", "source_config"]
