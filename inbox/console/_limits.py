"""The limit on failed sign-ins, per name and address and per address alone.

An attempt is counted when it starts, before its password is hashed, and forgiven only when
it succeeds: the hash runs in a thread, so counting after it would let concurrent guesses
all pass the check before the first one is counted. The count lives in the database
(inbox._operations.console_sign_ins), so every console process spends the same budget, and
the check and the count are one transaction that holds a lock on the address, so they are
atomic across processes too.
"""

from __future__ import annotations

from inbox.console import _api
from inbox.console._pool import ConsolePool

__all__ = ["LoginLimiter", "SignInLimited"]


class SignInLimited(Exception):
    """A limit is reached: nothing was counted, and ``wait`` seconds must pass."""

    def __init__(self, wait: float, *, per_address: bool) -> None:
        super().__init__(f"sign-in limited for {wait:.0f} s")
        self.wait = wait
        self.per_address = per_address


class LoginLimiter:
    """At most ``attempts`` failed sign-ins per (name, address), and ``per_address`` per
    address whatever the names (password spraying), within ``window`` seconds."""

    def __init__(self, pool: ConsolePool, attempts: int, window: float, per_address: int) -> None:
        self.pool = pool
        self.attempts = attempts
        self.window = window
        self.per_address = per_address

    async def begin(self, name: str, address: str) -> int:
        """Count an attempt as failed until :meth:`succeeded` says otherwise; its id.
        Raises :class:`SignInLimited` (counting nothing) when a limit is reached."""
        count = await self.pool.run(
            _api.begin_sign_in,
            name,
            address,
            attempts=self.attempts,
            per_address=self.per_address,
            window_seconds=self.window,
        )
        if count.name_wait is not None:
            raise SignInLimited(count.name_wait, per_address=False)
        if count.address_wait is not None:
            raise SignInLimited(count.address_wait, per_address=True)
        assert count.attempt is not None  # under both limits, so counted
        return count.attempt

    async def succeeded(self, attempt: int) -> None:
        """The attempt was right: it is no failure (earlier ones in the window still count,
        so a right guess does not reset the attacker's budget)."""
        await self.pool.run(_api.forgive_sign_in, attempt)
