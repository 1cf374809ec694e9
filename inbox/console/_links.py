"""The one-time sign-in links of ``inbox dev``: the one its banner prints, and the ones
``inbox console link`` mints while it runs. Dev has no users, so without a new link a used
one would leave nobody a way in until a restart.

A minted link waits in ``<data_dir>/console-links`` (0600) as the SHA-256 of its token and
its expiry, one line each, until it is used: the file never holds a working link, and one
nobody opened goes stale by itself. The command and the running console take the file's
lock for each change, so a link minted while another is used is never lost.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["LINKS_FILE", "LINK_LIFETIME_SECONDS", "NEW_LINK_COMMAND", "DevToken", "mint_link"]

LINKS_FILE = "console-links"
# Long enough to copy a link from one terminal into a browser; short enough that a link
# left in a scrollback or a shell history is useless by the time anyone else finds it.
LINK_LIFETIME_SECONDS = 15 * 60
NEW_LINK_COMMAND = "inbox console link"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@contextmanager
def _locked(path: Path) -> Iterator[IO[str]]:
    """``path`` open for reading and rewriting, created 0600, under an exclusive lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Never through a symbolic link: the tokens go only into the data directory's own file.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)  # a file that existed keeps its mode through O_CREAT
    with os.fdopen(fd, "r+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        yield file


def _unexpired(text: str, now: float) -> list[tuple[str, int]]:
    entries = []
    for line in text.splitlines():
        digest, _, expires = line.partition(" ")
        if expires.isdigit() and int(expires) > now:
            entries.append((digest, int(expires)))
    return entries


def _rewrite(file: IO[str], entries: list[tuple[str, int]]) -> None:
    file.seek(0)
    file.truncate()
    file.write("".join(f"{digest} {expires}\n" for digest, expires in entries))


def mint_link(data_dir: Path, *, now: float | None = None) -> str:
    """A new token that the console of the ``inbox dev`` on ``data_dir`` accepts once,
    within ``LINK_LIFETIME_SECONDS``; expired ones are dropped on the way."""
    token = secrets.token_urlsafe(24)
    now = time.time() if now is None else now
    with _locked(data_dir / LINKS_FILE) as file:
        entries = _unexpired(file.read(), now)
        entries.append((_digest(token), int(now + LINK_LIFETIME_SECONDS)))
        _rewrite(file, entries)
    return token


class DevToken:
    """The one-time links ``inbox dev``'s console accepts, each valid once, for an operator
    session: the banner's (in memory), and with ``data_dir`` those minted into its file.
    ``command`` and ``folder`` say how to get a new one."""

    def __init__(
        self,
        token: str | None = None,
        *,
        data_dir: Path | None = None,
        command: str = NEW_LINK_COMMAND,
        folder: Path | None = None,
    ) -> None:
        self.value = token or secrets.token_urlsafe(24)
        self._token: str | None = self.value
        self.links = None if data_dir is None else data_dir.expanduser().resolve() / LINKS_FILE
        self.command = command
        self.folder = folder

    def redeem(self, offered: str, *, now: float | None = None) -> bool:
        """Whether ``offered`` is a link not used yet (it is used up by this call). Blocks
        on the file's lock: call it off the event loop."""
        token = self._token
        if token is not None and secrets.compare_digest(offered.encode(), token.encode()):
            self._token = None
            return True
        # A wrong guess creates no file; the lock is taken only where links were minted.
        if self.links is None or not self.links.is_file():
            return False
        offered_digest = _digest(offered)
        now = time.time() if now is None else now
        with _locked(self.links) as file:
            entries = _unexpired(file.read(), now)
            kept = [e for e in entries if not secrets.compare_digest(e[0], offered_digest)]
            _rewrite(file, kept)
        return len(kept) < len(entries)
