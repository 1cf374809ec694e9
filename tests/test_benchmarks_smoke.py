"""Benchmarks at a smoke size: the duplicate storm (real `inbox serve` and `inbox worker`
processes, concurrent signed duplicates over HTTP, and an exact account in the database), the
console's, the pooler's, and the HTTP receivers' with Flask and Django under gunicorn.

Only what CI installs runs here (the ``dev`` extra, PgBouncer; the peers of the other
benchmarks are not installed in CI). Timings are printed by the benchmark, never asserted.
"""

from __future__ import annotations

import collections
from pathlib import Path

import psycopg
import pytest

from benchmarks import storm
from benchmarks._apps import BUSINESS_TABLE_DDL

pytestmark = pytest.mark.slow

KEYS, COPIES = 20, 5


def test_a_storm_of_duplicates_is_processed_exactly_once(db_url: str, tmp_path: Path) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(BUSINESS_TABLE_DDL)  # type: ignore[arg-type]

    run = storm.run_once(
        db_url, keys=KEYS, copies=COPIES, concurrency=16, logs=tmp_path, timeout=30
    )

    account = run.account
    assert (account.events, account.processed, account.business) == (KEYS, KEYS, KEYS)
    assert account.work_left == 0
    assert account.other_attempts == 0
    assert account.deliveries == KEYS * (COPIES - 1)
    assert run.outcomes == collections.Counter(
        {"2xx accepted": KEYS, "2xx duplicate": KEYS * (COPIES - 1)}
    )
    assert run.exactly_once
    assert run.mismatches() == []


def test_the_console_benchmark_runs_at_a_smoke_size(
    tmp_path: Path, pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m benchmarks console` fills, times the API and the pages, and reports."""
    from benchmarks import console

    monkeypatch.setenv("INBOX_BENCH_DATABASE_URL", pg_server)
    # the benchmark's own signal handlers are for its command line, not for pytest's process
    monkeypatch.setattr("benchmarks._report_frame.stop_cleanly_on_signals", lambda: None)
    out = tmp_path / "console.md"
    code = console.main(
        ["--events", "2000", "--calls", "3", "--runs", "1", "--pages", "--out", str(out)]
    )
    assert code == 0
    report = out.read_text()
    assert "| event detail |" in report
    assert "| GET /events/{id} (detail) |" in report


def test_the_pooler_benchmark_runs_at_a_smoke_size(
    tmp_path: Path, pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m benchmarks pooler` measures `inbox serve`, the wake latency and the drain
    through PgBouncer and directly, and loses and doubles nothing either way."""
    from benchmarks import pooler
    from benchmarks._report_frame import run_driver
    from tests._pgbouncer import pgbouncer_binary

    pgbouncer_binary()  # skips the test without PgBouncer (fails it where CI is set)
    monkeypatch.setenv("INBOX_BENCH_DATABASE_URL", pg_server)
    # the benchmark's own signal handlers are for its command line, not for pytest's process
    monkeypatch.setattr("benchmarks._report_frame.stop_cleanly_on_signals", lambda: None)
    out = tmp_path / "pooler.md"
    code = run_driver(pooler.DRIVER, ["--quick", "--out", str(out)])
    report = out.read_text()
    assert code == 0, report
    assert "| `inbox serve`, req/s at 16 connections |" in report
    assert "| commit → handler start, p50 ms |" in report
    assert "PROBLEM" not in report


def test_the_receivers_benchmark_serves_flask_and_django_through_gunicorn(
    tmp_path: Path, pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m benchmarks receiver_load --wsgi ...`: every target answers every signed
    request with a 2xx, and each WSGI receiver stored exactly what it acknowledged."""
    from benchmarks import receiver_load

    monkeypatch.setattr(receiver_load, "WARMUP_REQUESTS", 10)  # six targets warm up
    sizes = ["--requests", "40", "--runs", "1", "--concurrency", "4"]
    wsgi = ["--wsgi", "flask:1x4", "django:2x2", "handwritten:1x4"]
    result = receiver_load.measure(
        pg_server, receiver_load.DRIVER.parse_args([*sizes, *wsgi]), tmp_path
    )

    flask, django = "Flask (gunicorn 1x4)", "Django (gunicorn 2x2)"
    peer = "hand-written Flask (gunicorn 1x4)"
    assert {c.target for c in result.cells} >= {flask, django, peer, receiver_load.PEER_TARGET}
    assert [c.failures for c in result.cells] == [0] * len(result.cells)
    assert result.wsgi_stored == {t: result.expected(t) for t in (flask, django, peer)}
    report = "\n".join(receiver_load.render(result))
    assert f"| 4 | {flask} |" in report
    assert f"| 4 | {django} |" in report
    # Each sync receiver is also compared with the hand-written one on its own server.
    row = next(line for line in report.splitlines() if line.startswith(f"| 4 | {flask} |"))
    assert row.split(" | ")[5].endswith("x")
