"""Where a claim loop's next claim scans the claim index from, and the claim's parameters.
I/O-free: the store runs the claim, ``ClaimCursor`` says where it starts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from processors._model.claimed import ClaimedEvent

__all__ = ["CLAIM_WINDOW_BATCHES", "START", "Claim", "ClaimCursor", "Position", "claim_params"]

# An index position of inbox_work_claim: (priority, run_at, event_id).
Position = tuple[int, datetime, int]
# Before every entry: a claim from here scans the index from its start.
START: Position = (-32768, datetime.min.replace(tzinfo=UTC), 0)


# A claim looks at no more than this many batches' worth of pending rows (see claim_batch):
# an ordered backlog's followers of keys in flight are passed a window at a time.
CLAIM_WINDOW_BATCHES = 8


def claim_params(
    batch_size: int,
    after: Position = START,
    *,
    windowed: bool = True,
    version: str | None = None,
) -> dict[str, Any]:
    """claim_batch's parameters: up to ``batch_size`` rows after index position ``after``,
    among the next ``CLAIM_WINDOW_BATCHES`` batches' worth of pending rows if ``windowed``,
    for a worker running ``version`` of the code."""
    return {
        "batch_size": batch_size,
        "window": CLAIM_WINDOW_BATCHES * batch_size if windowed else 0,
        "after_priority": after[0],
        "after_run_at": after[1],
        "after_event_id": after[2],
        "version": version,
    }


@dataclass(frozen=True, slots=True)
class Claim:
    """A claimed batch, and whether a suspect was found waiting (the caller then gives the
    batch up: a suspect runs with the process to itself). ``last``: the index position of
    the batch's last row (None when empty)."""

    batch: list[ClaimedEvent]
    suspect_waiting: bool
    last: Position | None = None
    window_end: Position | None = None
    """The last position the claim looked at; None when it looked to the queue's end."""


class ClaimCursor:
    """Where a claim loop's next claim starts scanning inbox_work_claim (I/O free).

    A settled work row leaves a dead entry in the index until vacuum removes it, and a claim
    from the index's start walks every one, so a long drain's claims slowed as the dead
    prefix grew. So after a full batch the next claim
    resumes after that batch's last row. A claim looks at one window of pending rows (see
    claim_batch), except after a batch of unordered work. After a claim short of a batch,
    the next claims take turns: one from the start (where the keys that settled free their
    next events), one sweeping the window after the last one swept (where a key whose first
    event came late has its head), so an ordered backlog whose first rows wait for keys in
    flight costs a window a claim, never the whole queue; the sweep starts over at the
    queue's end. What a resumed scan cannot see (a row behind the position: committed late
    with an earlier run_at, given back by a worker that died or a batch released unrun, a
    new live event while the loop was among the replays, a follower whose key's head has
    settled) is found by the scan from the start, which runs after a short batch's sweep
    turn and at least every ``rescan_seconds`` — so such a row waits at most that long, and
    no longer than before when the queue is short.
    """

    def __init__(self, rescan_seconds: float = 1.0) -> None:
        self._rescan_seconds = rescan_seconds
        self._after = START
        self._began = START
        self._sweep = START
        self._rescan_at = 0.0
        self.from_start = True
        """Whether the last ``start`` scans from the beginning (then suspects are looked for)."""
        self.windowed = True
        """Whether the last ``start``'s claim looks at one window only (see claimed)."""

    def start(self, now: float) -> Position:
        """The position the claim taken at monotonic time ``now`` scans after."""
        if now >= self._rescan_at:
            self._after = START
            self.windowed = True
        self.from_start = self._after == START
        if self.from_start:
            self._rescan_at = now + self._rescan_seconds
        self._began = self._after
        return self._after

    def claimed(self, claim: Claim, batch_size: int) -> None:
        """Resume after a full batch. After a short one, alternate between the start and
        the sweep: the windows past the start, one per turn, back to the start at the
        queue's end."""
        if len(claim.batch) == batch_size and claim.last is not None:
            self._after = claim.last
            # After a batch of unordered work the walk needs no window: it stops once it has
            # a batch, and finding the window's end would cost a walk of its own (~10 % of a
            # no-op drain's rate). Past ordered events lie their keys' later events.
            self.windowed = any(item.ordering_key is not None for item in claim.batch)
            return
        self.windowed = True
        if self._began == self._sweep:
            self._sweep = START if claim.window_end is None else claim.window_end
        self._after = self._sweep if self.from_start else START
