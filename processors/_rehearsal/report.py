"""What a rehearsal found: per event, its outcome, how long it took and what it wrote."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["EventRehearsal", "Rehearsal", "TableWrites"]

Outcome = Literal["succeeded", "failed", "retry", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("succeeded", "failed", "retry", "skipped")


@dataclass(frozen=True, slots=True)
class TableWrites:
    """Rows one event's handler inserted, updated and deleted in one table."""

    table: str
    """``schema.table``."""
    inserted: int
    updated: int
    deleted: int


@dataclass(frozen=True, slots=True)
class EventRehearsal:
    """One event's rehearsal."""

    event_id: int
    source: str
    key: str
    type: str | None
    outcome: Outcome
    handler: str | None
    """The routed handler's dotted name (None: no handler is routed)."""
    duration_seconds: float
    writes: list[TableWrites] = field(default_factory=list)
    """Counted before the rollback; a failed event's are those before it failed."""
    error_class: str | None = None
    error: str | None = None
    """The failure's message, the retry's reason, or why the handler was skipped."""
    traceback: str | None = None
    retry_after_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """A rehearsal's report, its events in the order they ran."""

    events: list[EventRehearsal]
    missing: list[int] = field(default_factory=list)
    """Ids asked for that are not in the log (pruned, or never there)."""

    def counts(self) -> dict[str, int]:
        """Events by outcome, every outcome named."""
        found = Counter(e.outcome for e in self.events)
        return {outcome: found[outcome] for outcome in OUTCOMES}

    @property
    def failed(self) -> int:
        """How many events would fail."""
        return sum(1 for e in self.events if e.outcome == "failed")

    def failures(self) -> list[dict[str, Any]]:
        """The failures grouped by error (class and message), the largest group first."""
        groups: dict[tuple[str, str], list[int]] = {}
        for e in self.events:
            if e.outcome == "failed":
                groups.setdefault((e.error_class or "?", e.error or ""), []).append(e.event_id)
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
        return [
            {"error_class": cls, "error": msg, "count": len(ids), "event_ids": ids}
            for (cls, msg), ids in ordered
        ]

    def skipped(self) -> list[dict[str, Any]]:
        """The handlers a rehearsal skipped, why, and for which events."""
        groups: dict[tuple[str | None, str], list[int]] = {}
        for e in self.events:
            if e.outcome == "skipped":
                groups.setdefault((e.handler, e.error or ""), []).append(e.event_id)
        return [
            {"handler": handler, "why": why, "event_ids": ids}
            for (handler, why), ids in groups.items()
        ]

    def writes(self) -> dict[str, dict[str, int]]:
        """Rows by table over every event: what a replay would write, summed."""
        total: dict[str, Counter[str]] = {}
        for e in self.events:
            for w in e.writes:
                counter = total.setdefault(w.table, Counter())
                counter.update(inserted=w.inserted, updated=w.updated, deleted=w.deleted)
        return {
            table: {k: counter[k] for k in ("inserted", "updated", "deleted")}
            for table, counter in sorted(total.items())
        }

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` form."""
        return {
            "counts": self.counts(),
            "failures": self.failures(),
            "skipped": self.skipped(),
            "writes": self.writes(),
            "missing": self.missing,
            "events": [asdict(e) for e in self.events],
        }

    def render(self) -> str:
        """The report for a person: a line per event, then the summary."""
        lines = []
        for e in self.events:
            wrote = ", ".join(
                f"{w.table} +{w.inserted} ~{w.updated} -{w.deleted}" for w in e.writes
            )
            what = {
                "succeeded": "would succeed",
                "failed": f"would fail: {e.error_class}: {e.error}",
                "retry": f"would ask for a retry: {e.error}",
                "skipped": f"skipped: {e.error}",
            }[e.outcome]
            lines.append(
                f"event {e.event_id} ({e.source}/{e.type or '-'}) {what}"
                f" [{e.duration_seconds * 1000:.1f} ms]" + (f"; writes {wrote}" if wrote else "")
            )
            if e.traceback:
                lines += ["    " + line for line in e.traceback.rstrip().splitlines()]
        counts = self.counts()
        lines.append(
            f"rehearsed {len(self.events)} event(s): {counts['succeeded']} would succeed,"
            f" {counts['failed']} would fail, {counts['retry']} would ask for a retry,"
            f" {counts['skipped']} skipped. Everything rolled back."
        )
        for group in self.failures():
            lines.append(
                f"  {group['count']} x {group['error_class']}: {group['error']}"
                f" (events {', '.join(map(str, group['event_ids']))})"
            )
        for table, rows in self.writes().items():
            lines.append(
                f"  would write {table}: {rows['inserted']} inserted, {rows['updated']}"
                f" updated, {rows['deleted']} deleted"
            )
        if self.missing:
            lines.append(f"  not in the log: {', '.join(map(str, self.missing))}")
        return "\n".join(lines)
