"""Output for people: tables fit the terminal, times read relative, colour only on a TTY."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from inbox._operations.selection import EventFilter, glob_to_like
from inbox._operations.term import Progress, relative, table, use_colour
from inbox.queries import parse_duration, parse_time


def test_a_wide_table_is_clipped_to_the_terminal_width() -> None:
    rows = [["1", "stripe", "x" * 200], ["22", "github", "short"]]
    out = table(["ID", "SOURCE", "LAST ERROR"], rows, colour=False, width=60)
    assert all(len(line) <= 60 for line in out.splitlines())
    assert "…" in out
    assert "\x1b[" not in out
    coloured = table(["ID"], [[("1", "red")]], colour=True, width=60)
    assert "\x1b[31m" in coloured


def test_colour_only_on_a_terminal_and_never_with_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_colour(Tty())
    assert not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Tty())


def test_times_read_relative() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert relative(now - timedelta(minutes=3), now) == "3 min ago"
    assert relative(now + timedelta(seconds=20), now) == "in 20.0 s"
    assert relative(now - timedelta(days=2), now) == "2 d ago"
    assert relative(None, now) == "-"


def test_durations_times_and_globs_parse() -> None:
    assert parse_duration("90d") == timedelta(days=90)
    assert parse_duration("30m") == timedelta(minutes=30)
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_time("2h", now=now) == now - timedelta(hours=2)
    assert parse_time("2025-12-31T10:00:00") == datetime(2025, 12, 31, 10, tzinfo=UTC)
    assert glob_to_like("invoice.*") == "invoice.%"
    assert glob_to_like("a_b%?") == "a\\_b\\%_"
    with pytest.raises(ValueError, match="unknown state"):
        EventFilter(states=("finished",))  # type: ignore[arg-type]


def test_the_progress_bar_draws_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = io.StringIO()
    Progress(10, "queueing", quiet).advance(5)
    assert quiet.getvalue() == ""
    shown = Tty()
    bar = Progress(10, "queueing", shown)
    bar.advance(5)
    bar.close()
    assert "50% 5/10" in shown.getvalue()
