"""What a worker process says to its orchestrator: is it alive, is it ready. I/O-free.

The worker's event loop and claim loops record here what they do; the probes (``/livez``,
``/readyz`` beside ``/metrics``, processors._worker.probes) and the systemd watchdog read it from
another thread. Plain attribute writes and reads: each is atomic, and a probe that reads a
state a moment old only answers a moment late.

- **Live**: the event loop has ticked recently and no claim loop has stayed in one step
  (connecting, a batch, an idle wait, a back-off) longer than that step can last. A database
  outage never makes a worker not live: connections that fail, fail within their timeout,
  and the loops go round again. Restarting a worker cures only a stuck one.
- **Ready**: the worker runs, every claim loop holds a connection that worked, the listener
  is up (unless the worker only polls), and it is not draining (a stop was requested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from inbox._core.config.settings import WorkerSettings

__all__ = ["Verdict", "WorkerHealth", "stuck_after_seconds"]

# How often the event loop says it is alive.
TICK_SECONDS = 1.0
# On top of the longest step a claim loop may take legitimately: connecting (per host, and
# a multi-host URL tries each), GC pauses, a busy machine.
STEP_MARGIN_SECONDS = 60.0


def stuck_after_seconds(settings: WorkerSettings) -> float:
    """How long one step of a claim loop may last before the loop counts as stuck: a batch's
    time limit (four handler time limits and 30 s, as the worker's transaction limit), or
    an idle wait for the next poll, plus ``STEP_MARGIN_SECONDS``."""
    batch = 4 * settings.handler_timeout_seconds + 30.0
    return max(batch, settings.poll_interval_seconds) + STEP_MARGIN_SECONDS


def stalled_after_seconds(settings: WorkerSettings) -> float:
    """How long the event loop may go without ticking: a loop blocked longer than a handler
    may run enforces no handler's time limit any more."""
    return settings.handler_timeout_seconds + 5.0


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    status: str  # "ok", or why not: "starting", "draining", "unavailable", "stuck"
    checks: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"status": self.status, **self.checks}


class WorkerHealth:
    """The state the probes judge; see the module's docstring."""

    def __init__(self, settings: WorkerSettings, *, concurrency: int = 1) -> None:
        self.stuck_after = stuck_after_seconds(settings)
        self.stalled_after = stalled_after_seconds(settings)
        self.concurrency = concurrency
        self.running = False  # the worker's event loop runs its claim loops
        self.listening = settings.listen
        self.listener_up = False
        self.draining = False
        self._tick: float | None = None
        # Per claim loop: when its current step began, and whether its connection worked.
        self._step_started: dict[int, float] = {}
        self._connected: dict[int, bool] = {}

    def started(self, now: float, *, listening: bool) -> None:
        self.running = True
        self.listening = listening
        self._tick = now

    def tick(self, now: float) -> None:
        self._tick = now

    def step(self, loop: int, now: float) -> None:
        """Claim loop ``loop`` begins a step (its previous one ended)."""
        self._step_started[loop] = now

    def connected(self, loop: int, ok: bool) -> None:
        self._connected[loop] = ok

    def left(self, loop: int) -> None:
        """Claim loop ``loop`` has ended (the worker stops): it is no longer watched."""
        self._step_started.pop(loop, None)

    def liveness(self, now: float) -> Verdict:
        if not self.running:
            # Starting (waiting for the database, checking the schema) or stopped: the
            # process is alive, and a restart would only start it again.
            return Verdict(True, "ok", {"loop": "not started"})
        lag = now - self._tick if self._tick is not None else math.inf
        stuck = sorted(
            loop for loop, since in self._step_started.items() if now - since > self.stuck_after
        )
        checks = {"loop_lag_seconds": round(lag, 3), "stuck_claim_loops": stuck}
        if lag > self.stalled_after or stuck:
            return Verdict(False, "stuck", checks)
        return Verdict(True, "ok", checks)

    def readiness(self, now: float) -> Verdict:
        connected = sum(1 for ok in self._connected.values() if ok)
        checks = {
            "database": connected == self.concurrency,
            "claim_loops_connected": connected,
            "listener": "up" if self.listener_up else "down" if self.listening else "polling",
            "draining": self.draining,
        }
        if self.draining:
            return Verdict(False, "draining", checks)
        if not self.running:
            return Verdict(False, "starting", checks)
        if not checks["database"] or (self.listening and not self.listener_up):
            return Verdict(False, "unavailable", checks)
        return Verdict(True, "ok", checks)
