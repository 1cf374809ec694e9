"""The ingest benchmark's wake-up check: a separate process, as a worker would be, LISTENs,
counts the notifications and, after each batch of them, reads what a woken worker would find.
A run's tail is "woken" when the scan after the last notification saw the last row."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from multiprocessing.connection import Connection

import psycopg
from psycopg import sql

from inbox._core.sql import NOTIFY_CHANNEL

APP_NAME = "pg-inbox bench"


def _listener_main(pipe: Connection) -> None:
    """The child: LISTEN, count, scan after each batch; one database per "start"."""
    while True:
        command = pipe.recv()
        if command[0] == "exit":
            return
        _, url = command
        with (
            psycopg.connect(url, autocommit=True, application_name=APP_NAME) as listen,
            psycopg.connect(url, autocommit=True, application_name=APP_NAME) as scan,
        ):
            listen.execute(sql.SQL("listen {}").format(sql.Identifier(NOTIFY_CHANNEL)))
            pipe.send(("ready",))
            count = 0
            last_at = 0.0
            seen = 0
            stopping_at: float | None = None
            while stopping_at is None or time.monotonic() < stopping_at:
                batch = sum(1 for _ in listen.notifies(timeout=0.02))
                if batch:
                    count += batch
                    last_at = time.monotonic()
                    # What a worker woken now would find (ids are not in commit order).
                    row = scan.execute("select count(*) from inbox_events").fetchone()
                    seen = int(row[0]) if row else 0
                if stopping_at is None and pipe.poll():
                    pipe.recv()  # "stop": drain a little longer for what is in flight
                    stopping_at = time.monotonic() + 0.1
            pipe.send(("done", count, last_at, seen))


class Listener:
    """The listening process, started once and pointed at each run's database."""

    def __init__(self) -> None:
        ctx = mp.get_context("spawn")
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=_listener_main, args=(child,), daemon=True)
        self._proc.start()

    def start(self, url: str) -> None:
        self._pipe.send(("start", url))
        if self._pipe.recv()[0] != "ready":
            raise RuntimeError("listener did not start")

    def stop(self) -> tuple[int, float, int]:
        """(notifications, monotonic time of the last one, rows the last scan saw)."""
        self._pipe.send(("stop",))
        _, count, last_at, seen = self._pipe.recv()
        return int(count), float(last_at), int(seen)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._pipe.send(("exit",))
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.terminate()
