"""Where the worker reaches into its libraries' private parts, for speed: every such hook is
named here, checked once, and falls back to the plain public API when the library no longer
has what it needs (a renamed attribute must cost speed, never a crash or a wrong result).

- psycopg's pipeline (``processors._running.pipeline_send``): the connection's ``wait``, the
  pipeline's ``_communicate_gen``, ``_fetch_gen`` and ``command_queue``, statements queued
  as ``functools.partial``, the generator protocol of ``psycopg.waiting``. Off: a batch's
  async handlers run without pipeline mode, each statement a round trip (psycopg's own
  pipeline waits for ever on a statement larger than the socket's buffers), slower by what
  benchmarks/ANALYSIS.md says in "The worker's pipeline".
- psycopg's binary jsonb loader (``processors._claiming.rows``): its ``_loads``. Off: psycopg's own
  loader (``json.loads``).
- pydantic's model slots (``processors._model.event``): ``__dict__``, ``__pydantic_fields_set__``,
  ``__pydantic_extra__``, ``__pydantic_private__``. Off: ``Event.model_construct``.

``INBOX_PSYCOPG_HOOKS=off`` turns the psycopg hooks off (for a comparison, or a psycopg this
release has not seen); the tests run the worker both ways. The supported versions are the
ones pyproject.toml allows, each tested in CI at its lowest and highest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from inbox._core.logs import get_logger

__all__ = ["Hooks", "hooks", "log_hooks_off", "pipeline_failed", "reset"]

log = get_logger("processors.worker")

HOOKS_ENV = "INBOX_PSYCOPG_HOOKS"


@dataclass(frozen=True, slots=True)
class Hooks:
    """Which hooks this process uses; ``off`` says why each unused one is off."""

    pipeline: bool
    jsonb_loader: bool
    event_slots: bool
    off: tuple[str, ...]


def _pipeline_missing() -> str | None:
    import psycopg
    from psycopg import waiting

    wanted = {
        "psycopg.AsyncPipeline._communicate_gen": hasattr(
            psycopg.AsyncPipeline, "_communicate_gen"
        ),
        "psycopg.AsyncPipeline._fetch_gen": hasattr(psycopg.AsyncPipeline, "_fetch_gen"),
        "psycopg.AsyncConnection.wait": callable(getattr(psycopg.AsyncConnection, "wait", None)),
        "psycopg.waiting.Wait.W": hasattr(getattr(waiting, "Wait", None), "W"),
        "psycopg.waiting.Ready.R": hasattr(getattr(waiting, "Ready", None), "R"),
    }
    missing = [name for name, present in wanted.items() if not present]
    return f"psycopg {psycopg.__version__} lacks {', '.join(missing)}" if missing else None


def _jsonb_loader_missing() -> str | None:
    import psycopg
    from psycopg.types.json import JsonbBinaryLoader

    if callable(getattr(JsonbBinaryLoader, "_loads", None)):
        return None
    return f"psycopg {psycopg.__version__}'s JsonbBinaryLoader has no _loads"


def _event_slots_missing() -> str | None:
    import pydantic

    if pydantic.VERSION.split(".")[0] == "2":
        return None
    return f"pydantic {pydantic.VERSION} is not 2.x"


_decided: Hooks | None = None


def _decide() -> Hooks:
    forced_off = os.environ.get(HOOKS_ENV, "").strip().lower() in {"0", "off", "false", "no"}
    off: list[str] = []
    if forced_off:
        off.append(f"psycopg hooks turned off by {HOOKS_ENV}")
        pipeline = jsonb = False
    else:
        pipeline_missing, jsonb_missing = _pipeline_missing(), _jsonb_loader_missing()
        off += [m for m in (pipeline_missing, jsonb_missing) if m]
        pipeline, jsonb = pipeline_missing is None, jsonb_missing is None
    slots_missing = _event_slots_missing()
    if slots_missing:
        off.append(slots_missing)
    return Hooks(pipeline, jsonb, slots_missing is None, tuple(off))


def hooks() -> Hooks:
    """The hooks this process uses: decided at the first call (or again after ``reset``)."""
    global _decided
    if _decided is None:
        _decided = _decide()
    return _decided


def reset() -> None:
    """Decide again at the next call (after ``INBOX_PSYCOPG_HOOKS`` changed: tests)."""
    global _decided
    _decided = None


def pipeline_failed(exc: BaseException) -> None:
    """A pipeline hook met a psycopg it does not fit, at run time: off for the rest of the
    process, said once."""
    global _decided
    current = hooks()
    if not current.pipeline:
        return
    _decided = replace(current, pipeline=False, off=(*current.off, f"{type(exc).__name__}: {exc}"))
    log.warning(
        "psycopg_hooks_off", reasons=list(_decided.off), falls_back_to="psycopg's own sends"
    )


def log_hooks_off() -> None:
    """One line at the worker's start when any hook is off."""
    used = hooks()
    if used.off:
        log.warning(
            "psycopg_hooks_off",
            reasons=list(used.off),
            falls_back_to="the libraries' public API (slower, same results)",
        )
