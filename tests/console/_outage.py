"""A TCP proxy in front of PostgreSQL that can play an outage: while down, it cuts every
open connection and refuses new ones; back up, it forwards again."""

from __future__ import annotations

from psycopg.conninfo import make_conninfo

from tests._proxy import CommitCutter, PostgresProxy, close_both


class OutageProxy(PostgresProxy):
    def __init__(self, conninfo: str) -> None:
        self.is_down = False
        # A cutter that never fires: this proxy forwards everything while up.
        super().__init__(conninfo, CommitCutter(after=b"\x00never\x00", forward_commit=True))

    def conninfo(self) -> str:
        # A short connect timeout: the pool notices a refused connection quickly.
        return make_conninfo(super().conninfo(), connect_timeout="2")

    def down(self) -> None:
        self.is_down = True
        close_both(*self.take_sockets())

    def up(self) -> None:
        self.is_down = False

    def _refuses(self) -> bool:
        return self.is_down
