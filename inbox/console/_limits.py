"""The limit on failed sign-ins, per name and address and per address alone.

An attempt is counted when it starts, before its password is hashed, and forgiven only when
it succeeds: the hash runs in a thread, so counting after it would let concurrent guesses
all pass the check before the first one is counted. The check and the count happen on the
event loop with no await between them, so they are atomic there. Each process counts its
own attempts (``inbox serve`` with several processes has several counters).
"""

from __future__ import annotations

import time
from collections import deque

__all__ = ["LoginLimiter", "SignInLimited"]

Key = tuple[str, ...]

MAX_KEYS = 10_000


class SignInLimited(Exception):
    """A limit is reached: nothing was counted, and ``wait`` seconds must pass."""

    def __init__(self, wait: float, *, per_address: bool) -> None:
        super().__init__(f"sign-in limited for {wait:.0f} s")
        self.wait = wait
        self.per_address = per_address


class LoginLimiter:
    """At most ``attempts`` failed sign-ins per (name, address), and ``per_address`` per
    address whatever the names (password spraying), within ``window`` seconds."""

    def __init__(self, attempts: int, window: float, per_address: int) -> None:
        self.attempts = attempts
        self.window = window
        self.per_address = per_address
        self._failures: dict[Key, deque[float]] = {}

    def _recent(self, key: Key, now: float) -> deque[float]:
        failures = self._failures.get(key, deque())
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        return failures

    def _limits(self, name: str, address: str) -> list[tuple[Key, int]]:
        return [(("name", name, address), self.attempts), (("address", address), self.per_address)]

    def begin(self, name: str, address: str, now: float | None = None) -> float:
        """Count an attempt as failed until :meth:`succeeded` says otherwise; its time.
        Raises :class:`SignInLimited` (counting nothing) when a limit is reached."""
        now = time.monotonic() if now is None else now
        if len(self._failures) > MAX_KEYS:  # bounded: forget keys whose failures expired
            for stale in [k for k in self._failures if not self._recent(k, now)]:
                del self._failures[stale]
        limits = self._limits(name, address)
        for key, limit in limits:
            failures = self._recent(key, now)
            if len(failures) >= limit:
                raise SignInLimited(
                    failures[-limit] + self.window - now, per_address=key[0] == "address"
                )
        for key, _ in limits:
            failures = self._recent(key, now)
            failures.append(now)
            self._failures[key] = failures
        return now

    def succeeded(self, name: str, address: str, started: float) -> None:
        """The attempt begun at ``started`` was right: it is no failure (earlier ones in the
        window still count, so a right guess does not reset the attacker's budget)."""
        for key, _ in self._limits(name, address):
            failures = self._failures.get(key)
            if failures is not None and started in failures:
                failures.remove(started)
