"""``inbox replay --rehearse``: the selection's events run through the handlers in
transactions that roll back, and a report of what each would do.

Running handlers is the processing side's: ``processors`` plugs its rehearser into the
replay command (``set_defaults(rehearser=...)`` from its ``pg_inbox.cli`` entry point), so
this side selects the events and records the audit row without importing it.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any, Protocol

from inbox._cli.common import positive_int, print_json
from inbox._cli.logs import say
from inbox._core.config.settings import Settings
from inbox._core.errors import ConfigError, RefusedError
from inbox._core.runtime.resolve import database_url
from inbox._operations.rehearsal import record_rehearsal
from inbox._operations.replay import event_ids
from inbox._operations.selection import EventFilter

__all__ = [
    "RehearsalReport",
    "Rehearser",
    "add_rehearse_arguments",
    "check_rehearse_arguments",
    "rehearse_command",
]

# Options of a real replay that a rehearsal, which queues nothing, has no use for.
_REPLAY_ONLY = {
    "dry_run": "--dry-run",
    "rate": "--rate",
    "require_version": "--require-version",
    "include_processed": "--include-processed",
    "yes": "--yes",
}


class RehearsalReport(Protocol):
    failed: int

    def counts(self) -> dict[str, int]: ...

    def to_json(self) -> dict[str, Any]: ...

    def render(self) -> str: ...


class Rehearser(Protocol):
    def __call__(
        self, url: str, app: str, event_ids: list[int], *, timeout_seconds: float
    ) -> RehearsalReport: ...


def add_rehearse_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rehearse",
        action="store_true",
        help="run the handlers of --app on the selected events in transactions that roll"
        " back, and report what each would do and write (queues nothing)",
    )
    parser.add_argument(
        "--app", help="with --rehearse: the Router, as module:attribute (default: [app] router)"
    )
    parser.add_argument(
        "--limit",
        type=positive_int,
        help="with --rehearse: the oldest N selected events only",
    )


def check_rehearse_arguments(args: argparse.Namespace) -> None:
    """Refuse the options that belong to the other mode (a usage error)."""
    if not args.rehearse:
        for option in ("app", "limit"):
            if getattr(args, option) is not None:
                raise RefusedError(f"--{option} goes with --rehearse", action="replay")
        return
    given = [flag for name, flag in _REPLAY_ONLY.items() if getattr(args, name, None)]
    if given:
        raise RefusedError(
            f"--rehearse queues nothing: {', '.join(given)} do(es) not apply", action="replay"
        )


def rehearse_command(
    args: argparse.Namespace,
    settings: Settings,
    ids: list[int] | None,
    selection: EventFilter | None,
) -> int:
    """Rehearse the selection: exit 0 when every event would succeed (or was skipped or
    would ask for a retry), 1 when any would fail."""
    rehearser: Rehearser | None = getattr(args, "rehearser", None)
    if rehearser is None:
        raise ConfigError(
            "--rehearse runs handlers, which is the processing side's: install pg-inbox with"
            " its processors package"
        )
    app = args.app or settings.app.router
    if not app:
        raise ConfigError(
            "rehearse with which handlers? pass --app module:router, or set [app] router"
        )
    chosen = selection or EventFilter()
    if ids is not None:
        chosen = replace(chosen, ids=tuple(ids))
    with database_url(settings, say=say, part="operator") as url:
        selected = event_ids(url, chosen)
    if args.limit is not None:
        selected = selected[: args.limit]
    with database_url(settings, say=say, part="worker") as url:
        report = rehearser(
            url, app, selected, timeout_seconds=settings.worker.handler_timeout_seconds
        )
    counts = report.counts()
    with database_url(settings, say=say, part="operator") as url:
        rehearsal_id = record_rehearsal(
            url,
            selection=chosen,
            selected=len(selected),
            outcome=counts,
            reason=args.reason,
            via="cli",
        )
    if args.json:
        print_json({"rehearsal_id": rehearsal_id, **report.to_json()})
    else:
        print(report.render())
        print(f"rehearsal {rehearsal_id} recorded; nothing else was changed")
    return 1 if report.failed else 0
