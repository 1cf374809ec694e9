"""The after-commit wake-up coalescing, as pure decisions over a given clock."""

from __future__ import annotations

from inbox._writing.plan import NotifyCoalescer


def test_first_commit_after_a_quiet_spell_notifies_at_once() -> None:
    c = NotifyCoalescer(0.05)
    assert c.after_commit(10.0) == 0.0
    assert c.after_commit(10.2) == 0.0  # the interval has passed: at once again


def test_commits_inside_the_interval_share_one_trailing_notify() -> None:
    c = NotifyCoalescer(0.05)
    assert c.after_commit(10.00) == 0.0
    delay = c.after_commit(10.01)
    assert delay is not None
    assert abs(delay - 0.04) < 1e-9
    assert c.after_commit(10.02) is None  # already covered by the scheduled one
    assert c.after_commit(10.03) is None
    assert c.take_trailing(10.05) is True
    assert c.take_trailing(10.05) is False  # exactly once


def test_a_commit_while_the_trailing_notify_is_sent_is_covered_again() -> None:
    c = NotifyCoalescer(0.05)
    c.after_commit(10.00)
    c.after_commit(10.01)
    assert c.take_trailing(10.05)  # the slot is cleared before the NOTIFY goes out
    # A commit that lands while that NOTIFY is on its way is not left to the poll:
    assert c.after_commit(10.06) is not None


def test_closing_with_nothing_owed_sends_nothing() -> None:
    c = NotifyCoalescer(0.05)
    c.after_commit(10.0)
    assert c.take_trailing(10.01) is False
