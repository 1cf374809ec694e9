"""Reproducible benchmarks for pg-inbox (see DESIGN.md); each prints a table.

Run one with ``python -m benchmarks.ingest`` (or ``python -m benchmarks ingest``).
"""
