"""The real HTTP receiver (``inbox.create_app`` under uvicorn) in a thread of this process,
so its spans reach this process's in-memory exporter."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from inbox import Settings, create_app
from tests._wait import wait_for


@contextmanager
def serving(settings: Settings, db_url: str, port: int) -> Iterator[str]:
    """Serve the receiver for ``settings`` on 127.0.0.1:``port``; yield its base URL."""
    config = uvicorn.Config(
        create_app(settings, dsn=db_url),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="none",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="receiver", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), timeout=30, what="uvicorn")
        assert server.started, "the receiver did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
