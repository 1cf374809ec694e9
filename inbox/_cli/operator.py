"""``inbox status``, ``inbox events list/show`` and ``inbox prune``: thin layers over
``inbox.queries``. ``--json`` output is each record's ``to_json()`` (docs/operations.md)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from inbox import queries
from inbox._cli.common import (
    STATE_STYLES,
    add_filter_arguments,
    add_page_arguments,
    confirm,
    event_ref,
    filter_from_args,
    http_url,
    list_page,
    print_json,
    print_result,
    workers_line,
)
from inbox._cli.logs import say
from inbox._core.config.settings import Settings
from inbox._core.runtime.resolve import database_url
from inbox._operations.models import Attempt, EventDetail, HeldKey, PrunedPartition, Status
from inbox._operations.term import Cell, human_duration, paint, relative, table, use_colour

__all__ = ["register"]

HEX_LIMIT = 4096
# The receiver's INSERT ... ON CONFLICT takes an id from the sequence before it finds the key
# taken, and a sequence never gives a value back: operators who see 1, 2, 24 ask where the
# rest went.
IDS_ARE_NOT_CONSECUTIVE = (
    "Event ids are not consecutive: a duplicate delivery (or a write rolled back) uses up an"
    " id without making an event, so a gap in the ids is no missing event."
)


def _duration(text: str) -> timedelta:
    try:
        return queries.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# --- status -------------------------------------------------------------------------------


def _status(args: argparse.Namespace, settings: Settings) -> int:
    with database_url(settings, say=say, part="operator") as url:
        st = queries.status(
            url,
            max_age=args.max_age,
            sources=[s.name for s in settings.sources],
            receiver_metrics=args.receiver_metrics or (),
        )
    print_result(args, st, _render_status)
    return 0 if st.healthy else 2


def _render_status(st: Status) -> str:
    colour = use_colour()

    def age(seconds: float | None) -> Cell:
        if seconds is None:
            return "-"
        return (human_duration(seconds), "red" if seconds > st.max_age_seconds else None)

    rows: list[list[Cell]] = [
        [
            s.source,
            str(s.received_1h),
            str(s.received_24h),
            str(s.duplicates_24h),
            "n/a" if s.rejected is None else str(s.rejected),
            str(s.pending),
            (str(s.retrying), "yellow" if s.retrying else None),
            (str(s.dead), "red" if s.dead else None),
            str(s.replay_queued),
            age(s.oldest_pending_seconds),
            f"{s.processed_per_minute:.1f}",
        ]
        for s in st.sources
    ]
    headers = [
        "SOURCE", "RECV 1H", "RECV 24H", "DUPS 24H", "REJECTED", "PENDING", "RETRYING",
        "DEAD", "REPLAYING", "OLDEST PENDING", "DONE/MIN",
    ]  # fmt: skip
    if not st.healthy:
        verdict = paint("UNHEALTHY: " + "; ".join(st.problems), "red", colour)
    elif st.worker_processes == 0:
        verdict = paint("no worker seen (see the warning below)", "yellow", colour)
    else:
        verdict = paint("healthy", "green", colour)
    lines = [f"pg-inbox status: {verdict}"]
    lines.append(table(headers, rows, colour=colour, right=range(1, 11)) if rows else "no events")
    lines.append(
        f"workers: {st.worker_processes} process(es), {st.listeners} listener(s);"
        f" notification queue {st.notification_queue_usage:.0%} used"
    )
    if st.worker_versions:
        lines.append(f"code: {workers_line(st.worker_versions)}")
    if st.held:
        lines.append(
            paint(f"held keys: {st.held} (ordered keys waiting on their head)", "yellow", colour)
        )
        lines.append(_held_table(st.held_keys, colour))
    lines += [paint(f"warning: {w}", "yellow", colour) for w in st.warnings]
    if any(s.rejected is None for s in st.sources):
        lines.append(
            paint("rejected: n/a without --receiver-metrics URL (kept in memory)", "dim", colour)
        )
    return "\n".join(lines)


def _held_table(held: Sequence[HeldKey], colour: bool) -> str:
    headers = ["SOURCE", "ORDERING KEY", "HEAD", "HELD BY", "ATTEMPTS", "WAITING", "LAST ERROR"]
    rows: list[list[Cell]] = [
        [
            h.source,
            h.ordering_key,
            str(h.head_event_id),
            (h.reason, "red" if h.state == "dead" else "yellow"),
            str(h.attempts),
            str(h.waiting),
            (h.last_error or "")[:60],
        ]
        for h in held
    ]
    return table(headers, rows, colour=colour, right=(2, 4, 5))


# --- events -------------------------------------------------------------------------------


def _events_list(args: argparse.Namespace, settings: Settings) -> int:
    if args.held:
        with database_url(settings, say=say, part="operator") as url:
            held = queries.held_keys(url, limit=args.limit)
        if args.json:
            print_json({"held_keys": [h.to_json() for h in held]})
        else:
            print(_held_table(held, use_colour()) if held else "no held keys")
        return 0
    return list_page(args, settings, filter_from_args(args), empty="no events match")


def _events_show(args: argparse.Namespace, settings: Settings) -> int:
    with database_url(settings, say=say, part="operator") as url:
        detail = queries.event(url, args.ref, redact=settings.receiver.redact_headers)
    print_result(args, detail, render_event)
    return 0


def render_event(e: EventDetail) -> str:
    colour = use_colour()
    now = datetime.now(UTC)
    state = paint(e.state, STATE_STYLES[e.state], colour)
    out = [
        paint(f"event {e.id}  {e.source}:{e.key}", "bold", colour) + f"  {e.type or '-'}  {state}",
        f"received  {e.received_at.isoformat()} ({relative(e.received_at, now)})"
        f"  verifier {e.verifier or '-'}",
        f"body      {len(e.body)} bytes, sha256 {e.body_sha256.hex()}",
    ]
    if e.trace_id is not None:
        out.append(f"trace     {e.trace_id}")
    if e.work is not None:
        w = e.work
        due = f", next run {relative(w.run_at, now)}" if w.state == "pending" else ""
        out.append(
            f"queue     {w.state}, {w.attempts} failed attempt(s){due}"
            + (f", replay run {w.replay_id}" if w.replay_id is not None else "")
            + (f"\n          last error: {w.last_error}" if w.last_error else "")
        )
    out.append(paint("headers", "bold", colour))
    out += [f"  {name}: {value}" for name, value in sorted(e.headers.items())] or ["  (none)"]
    out.append(paint("body", "bold", colour))
    out.append(_indent(_body_text(e)))
    out.append(paint(f"deliveries ({len(e.deliveries)})", "bold", colour))
    rows: list[list[Cell]] = [
        [
            str(n),
            f"{d.received_at.isoformat(timespec='seconds')} ({relative(d.received_at, now)})",
            d.body_sha256.hex()[:16],
            _delivery_body(n, d.differs),
        ]
        for n, d in enumerate(e.deliveries, start=1)
    ]
    out.append(_indent(table(["#", "RECEIVED", "SHA256", "BODY"], rows, colour=colour)))
    out.append(paint(f"attempts ({len(e.attempts)})", "bold", colour))
    if e.attempts:
        # "#" numbers the whole history; RUN says which run an attempt belongs to and its
        # number within it (a replay's attempts count from 1 again).
        attempt_rows: list[list[Cell]] = [
            [
                str(a.sequence),
                ("live" if a.replay_id is None else f"replay {a.replay_id}") + f" #{a.attempt}",
                relative(a.started_at, now),
                human_duration(a.duration.total_seconds()),
                (a.outcome, STATE_STYLES.get(a.outcome) or ("red" if a.error_class else None)),
                a.handler or "-",
                a.worker or "-",
                a.version or "-",
                f"{a.error_class}: {a.error_message}" if a.error_class else "",
            ]
            for a in e.attempts
        ]
        headers = [
            "#", "RUN", "STARTED", "TOOK", "OUTCOME", "HANDLER", "WORKER", "VERSION", "ERROR",
        ]  # fmt: skip
        out.append(_indent(table(headers, attempt_rows, colour=colour)))
        reasons = {a.replay_id: a.replay_reason for a in e.attempts if a.replay_id is not None}
        out += [f"  replay {run}: {reason or '-'}" for run, reason in reasons.items()]
        out += _last_traceback(e.attempts, colour)
    else:
        out.append("  (none yet)")
    return "\n".join(out)


def _delivery_body(number: int, differs: bool) -> Cell:
    """The console's words: the first delivery is the event itself, the original."""
    if number == 1:
        return "original"
    return ("body differs", "yellow") if differs else "same body"


def _last_traceback(attempts: list[Attempt], colour: bool) -> list[str]:
    failed = [a for a in attempts if a.error_traceback]
    if not failed:
        return []
    last = failed[-1]
    more = f"; --json has all {len(failed)}" if len(failed) > 1 else ""
    ran = f", version {last.version}" if last.version else ""
    title = f"traceback of attempt {last.sequence}{ran}{more}"
    return [paint(title, "bold", colour), _indent(last.error_traceback or "")]


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _body_text(e: EventDetail) -> str:
    parsed = e.body_json()
    if parsed is not None:
        return json.dumps(parsed, indent=2, ensure_ascii=False)
    text = e.body_text()
    if text is not None and all(c.isprintable() or c in "\r\n\t" for c in text):
        return text
    shown = e.body[:HEX_LIMIT]
    lines = [
        f"{offset:08x}  {shown[offset : offset + 16].hex(' ')}"
        for offset in range(0, len(shown), 16)
    ]
    if len(e.body) > HEX_LIMIT:
        lines.append(f"... {len(e.body) - HEX_LIMIT} more bytes (--json has them all)")
    return "\n".join(lines)


# --- prune --------------------------------------------------------------------------------


def _prune(args: argparse.Namespace, settings: Settings) -> int:
    minimum = timedelta(days=settings.retention.minimum_days)
    with database_url(settings, say=say, part="retention") as url:
        preview = queries.prune(url, args.older_than, minimum=minimum, dry_run=True)
        result = preview
        question = (
            f"drop {len(preview.partitions_dropped)} partition(s) of the log older than"
            f" {preview.cutoff.isoformat(timespec='seconds')}"
            f" (~{preview.events_deleted} events)?"
        )
        if (
            not args.dry_run
            and preview.partitions_dropped
            and confirm(question, assume_yes=args.yes)
        ):
            result = queries.prune(url, args.older_than, minimum=minimum, via="cli")
    if args.json:
        print_json(result.to_json())
        return 0
    when = result.cutoff.isoformat(timespec="seconds")
    dropped = len(result.partitions_dropped)
    if args.dry_run:
        print(
            f"dry run: prune would drop {dropped} partition(s) older than {when}"
            f" (~{result.events_deleted} events)"
        )
    elif result.dry_run:  # nothing to remove, or the operator said no
        print(f"nothing removed (older than {when}: {dropped} partition(s) could go)")
    else:
        print(
            f"dropped {dropped} partition(s) older than {when}: ~{result.events_deleted}"
            f" events, ~{result.deliveries_deleted} deliveries, ~{result.attempts_deleted}"
            f" attempts; audit record {result.audit_id}"
        )
    for part in result.partitions_dropped:
        print(f"  {'would drop' if result.dry_run else 'dropped'} {_period(part)}")
    for part in result.partitions_kept:
        why = (
            "busy (a query held it; the next prune takes it)"
            if part.busy
            else f"{part.unsettled} event(s) still have work (pending, retrying or dead)"
        )
        print(f"  kept {_period(part)}: {why}")
    if result.keys_deleted:
        print(f"  {result.keys_deleted} key(s) older than [retention] keys_days removed")
    return 0


def _period(part: PrunedPartition) -> str:
    start = "the start" if part.start is None else part.start.date().isoformat()
    events = "" if part.events is None else f", ~{part.events} events"
    return f"{part.partition} ({start} to {part.end.date().isoformat()}{events})"


def register(commands: Any) -> None:
    status = commands.add_parser(
        "status", help="counts per source, oldest pending age, dead letters, throughput"
    )
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.add_argument(
        "--max-age",
        type=_duration,
        default=queries.DEFAULT_MAX_AGE,
        help="exit 2 when live work has waited longer than this (default 5m)",
    )
    status.add_argument(
        "--receiver-metrics",
        action="append",
        type=http_url,
        metavar="URL",
        help="a receiver's /metrics URL to read rejection counts from (repeatable)",
    )
    status.set_defaults(handler=_status)

    events = commands.add_parser("events", help="find and inspect events").add_subparsers(
        dest="events_command", required=True, metavar="ACTION"
    )
    listing = events.add_parser(
        "list", help="events, newest first, with filters", description=IDS_ARE_NOT_CONSECUTIVE
    )
    add_filter_arguments(listing)
    add_page_arguments(listing)
    listing.add_argument(
        "--held",
        action="store_true",
        help="ordered keys held by their head (a dead letter, or a retry), with the head",
    )
    listing.set_defaults(handler=_events_list)
    show = events.add_parser(
        "show",
        help="one event: headers, body, deliveries, attempts",
        description=IDS_ARE_NOT_CONSECUTIVE,
    )
    show.add_argument("ref", type=event_ref, help="an event id, or SOURCE:KEY")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=_events_show)

    prune = commands.add_parser(
        "prune",
        help="drop the log's partitions older than a cutoff (audited; a partition with"
        " pending, retrying or dead events is kept whole)",
    )
    prune.add_argument(
        "--older-than", type=_duration, required=True, help="e.g. 90d (minimum: 7d by default)"
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list the partitions it would drop; change nothing"
    )
    prune.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    prune.add_argument("--json", action="store_true", help="machine-readable output")
    prune.set_defaults(handler=_prune)
