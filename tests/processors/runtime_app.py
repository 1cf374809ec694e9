"""A handler that reports the process it runs in: the garbage collector's thresholds and the
event loop's class, one JSON line per event appended to the file ``RUNTIME_REPORT`` names
(tests/processors/test_cli_worker.py)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
from typing import Any

from processors import Event, Router

router = Router()


@router.on("*")
async def report(event: Event, conn: Any) -> None:
    loop = type(asyncio.get_running_loop())
    line = {"thresholds": list(gc.get_threshold()), "loop": f"{loop.__module__}.{loop.__name__}"}
    fd = os.open(os.environ["RUNTIME_REPORT"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)
