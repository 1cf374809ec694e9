"""Reproducible benchmarks for pg-inbox (see DESIGN.md); each prints a table.

``python -m benchmarks all`` runs every figure on one server and writes RESULTS.md and a
chart; ``python -m benchmarks NAME`` runs one (ingest, receiver_load, processing, storm).
"""
