"""The receiving room: framework-free handling of one webhook request.

Owns the I/O-free receiver core (``receiver``: verify, extract, respond) and what its steps
hand on (``delivery``: the source, the body being read, the pending write, the reply), running
it against a writer (``receive``), key and type extraction (``extract``), a source's verifier
and extraction built from its settings (``source_config``), signed sample requests for ``inbox
send`` (``samples``), the receiver's metrics (``metrics``) and the receipt's span
(``tracing``).

May import: the providers, writing and core rooms. Never operations: receiving and operating
are sides that never meet.
"""

__all__ = [
    "delivery",
    "extract",
    "metrics",
    "receive",
    "receiver",
    "samples",
    "source_config",
    "tracing",
]
