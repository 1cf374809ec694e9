"""Outages of the database as the processes that wait on it see them: I/O-free.

A process that cannot reach PostgreSQL keeps trying (promptly: it must be back at work as
soon as the server is), but says so once per interval, not once per attempt.
"""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["OUTAGE_LOG_SECONDS", "Outage", "describe_server"]

OUTAGE_LOG_SECONDS = 30.0


def describe_server(conninfo: str) -> str:
    """``host:port/dbname`` of a connection string, without its credentials.

    A multi-host string names each server as libpq pairs them: one port for every host, or
    one port per host (an empty one is the default port).
    """
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "the configured database"
    hosts = str(params.get("host") or params.get("hostaddr") or "").split(",")
    ports = str(params.get("port") or "").split(",")
    database = str(params.get("dbname") or params.get("user") or "")
    if len(ports) == 1:
        ports *= len(hosts)
    if len(ports) != len(hosts):
        # libpq refuses such a string when it connects: show it as written.
        servers = f"{','.join(hosts)}:{','.join(ports)}"
    else:
        servers = ",".join(f"{_host(h)}:{p or '5432'}" for h, p in zip(hosts, ports, strict=True))
    return f"{servers}/{database}".rstrip("/")


def _host(host: str) -> str:
    if not host:
        return "the local socket"
    # An IPv6 address in brackets, so that its port stays readable.
    return f"[{host}]" if ":" in host and not host.startswith("/") else host


class Outage:
    """When the database became unreachable, and whether a warning is due: I/O-free."""

    def __init__(self, interval: float = OUTAGE_LOG_SECONDS) -> None:
        self._interval = interval
        self.since: float | None = None
        self._warned_at: float | None = None

    def failed(self, now: float) -> bool:
        """Record a failed reconnection; True when a warning is due."""
        if self.since is None:
            self.since = now
        if self._warned_at is not None and now - self._warned_at < self._interval:
            return False
        self._warned_at = now
        return True

    def recovered(self, now: float) -> float | None:
        """Record a new connection; the outage's length when one was warned about."""
        since, warned = self.since, self._warned_at
        self.since = self._warned_at = None
        return None if since is None or warned is None else now - since
