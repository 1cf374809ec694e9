"""Many batches at once, or one suspect alone.

An event whose earlier claim never settled (its worker died) is a suspect: it may be a
poison pill that kills whatever process runs it. Crash counters are per event, so when such
a process dies, every event it held is counted. Running a suspect while the process's other
claim loops hold batches would charge their innocent events with its crash, again and again,
until they too were dead-lettered. So a suspect runs with the process to itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

__all__ = ["SuspectGate"]


class SuspectGate:
    def __init__(self) -> None:
        self._condition = anyio.Condition()
        self._batches = 0
        self._suspect_running = False
        self._suspects_waiting = 0

    @asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Held while an ordinary batch runs; waits while a suspect runs or waits to."""
        async with self._condition:
            while self._suspect_running or self._suspects_waiting:
                await self._condition.wait()
            self._batches += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._condition:
                    self._batches -= 1
                    self._condition.notify_all()

    @asynccontextmanager
    async def suspect(self) -> AsyncIterator[None]:
        """Held while a suspect runs: no batch of this process runs beside it."""
        async with self._condition:
            self._suspects_waiting += 1
            try:
                while self._batches or self._suspect_running:
                    await self._condition.wait()
            finally:
                self._suspects_waiting -= 1
            self._suspect_running = True
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._condition:
                    self._suspect_running = False
                    self._condition.notify_all()
