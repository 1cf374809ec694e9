"""The suspect gate: a suspect waits for the running batches, and new batches wait for it."""

from __future__ import annotations

import anyio

from processors._claiming.gate import SuspectGate


def test_a_suspect_runs_alone_and_batches_queue_behind_it() -> None:
    order: list[str] = []

    async def main() -> None:
        gate = SuspectGate()
        batch_may_end = anyio.Event()
        batch_started = anyio.Event()
        suspect_waiting = anyio.Event()

        async def first_batch() -> None:
            async with gate.batch():
                order.append("batch 1 runs")
                batch_started.set()
                await batch_may_end.wait()
                order.append("batch 1 ends")

        async def suspect() -> None:
            await batch_started.wait()
            suspect_waiting.set()
            async with gate.suspect():
                order.append("suspect runs alone")

        async def second_batch() -> None:
            await suspect_waiting.wait()
            await anyio.wait_all_tasks_blocked()  # the suspect is parked at the gate
            batch_may_end.set()
            async with gate.batch():
                order.append("batch 2 runs")

        async with anyio.create_task_group() as tg:
            tg.start_soon(first_batch)
            tg.start_soon(suspect)
            tg.start_soon(second_batch)

    anyio.run(main)
    assert order == ["batch 1 runs", "batch 1 ends", "suspect runs alone", "batch 2 runs"]
