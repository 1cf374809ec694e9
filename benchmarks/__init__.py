"""Reproducible benchmarks for pg-inbox (see the README's Development section); each prints
a table.

``python -m benchmarks all`` runs every figure on one server and writes RESULTS.md and a
chart; ``python -m benchmarks NAME`` runs one (ingest, receiver_load, processing, storm);
``python -m benchmarks peers-env`` makes the peers' environment from ``peers.txt``.
"""
