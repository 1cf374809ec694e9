"""The handlers of the /metrics test's ``inbox worker``: type "fail" always fails."""

from __future__ import annotations

from typing import Any

from processors import Event, Router

router = Router()


@router.on("sw", "fail")
async def fail(event: Event, conn: Any) -> None:
    raise RuntimeError("this one always fails")


@router.on("sw", "*")
async def handle(event: Event, conn: Any) -> None:
    await conn.execute("select 1")
