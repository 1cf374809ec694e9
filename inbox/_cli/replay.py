"""``inbox replay`` and ``inbox dead list/retry/skip``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from inbox._cli.common import (
    above_zero,
    add_filter_arguments,
    add_page_arguments,
    confirm,
    events_table,
    filter_from_args,
    list_page,
    positive_int,
    print_json,
    print_result,
    workers_line,
)
from inbox._cli.logs import say
from inbox._cli.rehearse import (
    add_rehearse_arguments,
    check_rehearse_arguments,
    rehearse_command,
)
from inbox._core.config.settings import Settings
from inbox._core.errors import RefusedError
from inbox._core.runtime.resolve import database_url
from inbox._operations.replay import ReplayResult, replay, skip_dead
from inbox._operations.selection import EventFilter
from inbox._operations.term import Progress

__all__ = ["CONFIRM_ABOVE", "PROGRESS_ABOVE", "register"]

CONFIRM_ABOVE = 100
PROGRESS_ABOVE = 1000


def _selection(args: argparse.Namespace) -> EventFilter | None:
    selection = filter_from_args(args)
    if selection.is_empty() and not getattr(args, "all", False):
        return None
    return selection


def _run(args: argparse.Namespace, settings: Settings, *, kind: str) -> int:
    if kind == "replay":
        check_rehearse_arguments(args)
    event_filter = _selection(args)
    if kind == "dead-retry":
        event_filter = replace(event_filter or EventFilter(), states=("dead",))
    ids = args.ids or None
    if ids is None and event_filter is None:
        raise RefusedError(
            "replay what? give event ids or filters (--state dead, --source, --since, ...);"
            " --all selects every event",
            action="replay",
        )
    if getattr(args, "rehearse", False):
        return rehearse_command(args, settings, ids, event_filter)
    if not args.reason:
        raise RefusedError("a replay needs --reason (it is recorded with the run)", action="replay")
    bars: list[Progress] = []

    def ask(count: int) -> bool:
        # Asked again when the replay starts over on a fresh snapshot: one bar, the last.
        for bar in bars:
            bar.close()
        bars.clear()
        if count > CONFIRM_ABOVE and not confirm(
            f"queue {count} events for replay?", assume_yes=args.yes
        ):
            return False
        if count > PROGRESS_ABOVE:
            bars.append(Progress(count, "queueing"))
        return True

    def advance(n: int) -> None:
        for bar in bars:
            bar.advance(n)

    with database_url(settings, say=say, part="operator") as url:
        result = replay(
            url,
            reason=args.reason,
            ids=ids,
            event_filter=event_filter,
            dry_run=args.dry_run,
            rate=args.rate,
            confirm=ask,
            progress=advance,
            kind="dead-retry" if kind == "dead-retry" else "replay",
            include_processed=args.include_processed,
            via="cli",
            require_version=args.require_version,
        )
    for bar in bars:
        bar.close()
    print_result(args, result, _render)
    return 1 if result.cancelled else 0


def _processed_note(result: ReplayResult) -> str:
    if not result.already_processed:
        return ""
    return (
        f" {result.already_processed} of them were processed successfully before: their"
        " handlers run again, and their database writes happen again unless the handlers"
        " are replay-safe (docs/operations.md)."
    )


def _render(result: ReplayResult) -> str:
    required = (
        f" Only workers of version {result.required_version} run them."
        if result.required_version
        else ""
    )
    notes = [workers_line(result.workers), *(f"warning: {w}" for w in result.warnings)]
    if result.dry_run:
        lines = [
            f"dry run: {result.selected} event(s) selected; {result.queued} would be queued,"
            f" {result.already_pending} already have pending work. Nothing was changed."
            + required
            + _processed_note(result)
            + (" Going ahead needs --include-processed." if result.already_processed else ""),
            *notes,
        ]
        if result.sample:
            lines += [f"sample ({len(result.sample)}):", events_table(result.sample)]
        return "\n".join(lines)
    if result.cancelled:
        return "cancelled: nothing was queued"
    if result.replay_id is None:
        return "no events match: nothing was queued"
    return "\n".join(
        [
            f"replay run {result.replay_id}: queued {result.queued} of {result.selected}"
            f" selected event(s); {result.already_pending} already had pending work and were"
            " left alone. Workers run them after live work." + required + _processed_note(result),
            *notes,
        ]
    )


def _replay(args: argparse.Namespace, settings: Settings) -> int:
    return _run(args, settings, kind="replay")


def _dead_retry(args: argparse.Namespace, settings: Settings) -> int:
    return _run(args, settings, kind="dead-retry")


def _dead_list(args: argparse.Namespace, settings: Settings) -> int:
    selection = replace(filter_from_args(args), states=("dead",))
    return list_page(args, settings, selection, empty="no dead letters")


def _dead_skip(args: argparse.Namespace, settings: Settings) -> int:
    with database_url(settings, say=say, part="operator") as url:
        result = skip_dead(url, ids=args.ids, reason=args.reason, via="cli")
    if args.json:
        print_json(result.to_json())
    else:
        if result.skipped:
            print(
                f"skip run {result.skip_id}: skipped {len(result.skipped)} dead letter(s)"
                f" ({', '.join(map(str, result.skipped))}); their handlers did not run, and"
                " the keys they held go on"
            )
        if result.left_alone:
            print(f"not dead letters, left alone: {', '.join(map(str, result.left_alone))}")
    return 0 if result.skipped else 1


_rate = above_zero("events per second")


def _replay_options(parser: argparse.ArgumentParser, *, rehearse: bool = False) -> None:
    parser.add_argument(
        "ids", nargs="*", type=positive_int, help="event ids (combine with filters)"
    )
    if rehearse:
        parser.add_argument(
            "--reason", help="why: recorded with the run (required, except with --rehearse)"
        )
    else:
        parser.add_argument("--reason", required=True, help="why: recorded with the run")
    parser.add_argument("--dry-run", action="store_true", help="count and sample, change nothing")
    parser.add_argument(
        "--yes", action="store_true", help=f"no confirmation above {CONFIRM_ABOVE} events"
    )
    parser.add_argument(
        "--rate", type=_rate, help="at most this many events per second (spread by due time)"
    )
    parser.add_argument(
        "--include-processed",
        action="store_true",
        help="also re-run events that were processed successfully before (their handlers'"
        " writes happen again unless the handlers are replay-safe); refused without it",
    )
    parser.add_argument(
        "--require-version",
        metavar="VERSION",
        help="only a worker running this version of the code ([app] version, or the"
        " fingerprint `inbox status` shows) runs the events: deploy the fix, then replay",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def register(commands: Any) -> None:
    rep = commands.add_parser(
        "replay", help="re-run stored events after a bug fix (audited; the log is unchanged)"
    )
    _replay_options(rep, rehearse=True)
    add_filter_arguments(rep)
    rep.add_argument("--all", action="store_true", help="select every event (with no filter)")
    add_rehearse_arguments(rep)
    rep.set_defaults(handler=_replay)

    dead = commands.add_parser("dead", help="dead letters: list, retry and skip").add_subparsers(
        dest="dead_command", required=True, metavar="ACTION"
    )
    listing = dead.add_parser("list", help="dead-lettered events, newest first")
    add_filter_arguments(listing, states=False)
    add_page_arguments(listing)
    listing.set_defaults(handler=_dead_list)
    retry = dead.add_parser("retry", help="queue dead letters again (all, or those selected)")
    _replay_options(retry)
    add_filter_arguments(retry, states=False)
    retry.set_defaults(handler=_dead_retry, all=True)
    skip = dead.add_parser(
        "skip", help="give dead letters up unprocessed (audited); releases the keys they hold"
    )
    skip.add_argument("ids", nargs="+", type=positive_int, help="event ids of dead letters")
    skip.add_argument("--reason", required=True, help="why: recorded with the skip")
    skip.add_argument("--json", action="store_true", help="machine-readable output")
    skip.set_defaults(handler=_dead_skip)
