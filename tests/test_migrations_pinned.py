"""A released migration never changes: the SQL each revision sends, up and down, is pinned.

A database that ran a revision long ago keeps what that revision did, so the revision must go
on doing exactly that for every database that runs it later — including the text it borrows
from another revision (0003 and 0006 take 0001's ``append_only`` and ``GUARD``, so an edit of
0001 reaches them too). alembic's offline mode (``alembic upgrade --sql``) renders what each
revision sends without a database; each revision's part, each way, is compared with its pin,
``tests/fixtures/migrations/<revision>.<upgrade|downgrade>.expected`` (the expected
offline SQL: data the test compares against, not SQL anything runs).

The pins hold alembic's rendering as it is, and only the revisions' part of it: alembic's own
transaction and its ``alembic_version`` bookkeeping are alembic's, not a revision's, and may
change with alembic. The rendering is SQLAlchemy's compilation of each statement for psycopg:
``%`` doubled as psycopg's paramstyle needs, tabs as four spaces, the ends trimmed (whitespace
at a statement's very ends is the one thing the pins do not hold). Nothing in it varies between
runs, so nothing is normalised.

A new revision is pinned once it is written: ``python -m tests.test_migrations_pinned``, from the
repository root, writes the pins of every revision that has none and never touches an existing
one. Read them and commit them with the revision. While a revision is unreleased, delete its two
pins and run that again after changing it; once released, a change is a new revision.
"""

from __future__ import annotations

import difflib
import functools
import io
import re
from pathlib import Path

import pytest

from alembic import command
from inbox._core.database import migrate as _migrate
from tests.test_migrations import _revisions

REPO = Path(__file__).resolve().parent.parent
PINS = REPO / "tests" / "fixtures" / "migrations"
DIRECTIONS = ("upgrade", "downgrade")
REGENERATE = "python -m tests.test_migrations_pinned"

# alembic opens each step with this comment: "-- Running upgrade 0001 -> 0002".
_STEP = re.compile(r"^-- Running (upgrade|downgrade) (\S*) -> (\S*)$", re.MULTILINE)
# alembic's lines within a step: its version bookkeeping after each, its COMMIT after the last.
_ALEMBIC_LINE = re.compile(r"COMMIT;|(?:INSERT INTO|UPDATE|DELETE FROM) alembic_version .*;")


@functools.cache
def offline_sql(direction: str, script_location: Path | None = None) -> dict[str, str]:
    """What each revision sends ``direction`` (all the way), as alembic's offline mode renders
    it, by revision. ``script_location`` renders another checkout's migrations."""
    out = io.StringIO()
    cfg = _migrate._config("postgresql://unused")  # offline, alembic/env.py names no database
    cfg.output_buffer = out
    if script_location is not None:
        cfg.set_main_option("script_location", str(script_location))
    if direction == "upgrade":
        command.upgrade(cfg, "base:head", sql=True)
    else:
        command.downgrade(cfg, "head:base", sql=True)
    text = out.getvalue()
    steps = list(_STEP.finditer(text))
    parts: dict[str, str] = {}
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        # A step is named by the revision it runs: the one it goes to up, the one it leaves down.
        revision = step[3] if direction == "upgrade" else step[2]
        body = text[step.end() : following.start() if following else len(text)]
        kept = [line for line in body.split("\n") if not _ALEMBIC_LINE.fullmatch(line)]
        parts[revision] = "\n".join(kept).strip("\n") + "\n"
    return parts


def pin(revision: str, direction: str) -> Path:
    return PINS / f"{revision}.{direction}.expected"


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("revision", _revisions())
def test_each_revision_sends_its_pinned_sql(revision: str, direction: str) -> None:
    pinned = pin(revision, direction)
    where = pinned.relative_to(REPO)
    if not pinned.exists():
        pytest.fail(
            f"revision {revision} has no pinned {direction} SQL ({where}): run `{REGENERATE}`"
            " to write it, read it, and commit it with the revision",
            pytrace=False,
        )
    sent = offline_sql(direction)
    assert revision in sent, f"alembic's offline {direction} shows no step for {revision}"
    if sent[revision] != pinned.read_text():
        diff = difflib.unified_diff(
            pinned.read_text().splitlines(keepends=True),
            sent[revision].splitlines(keepends=True),
            fromfile=f"{where} (pinned)",
            tofile=f"revision {revision}'s {direction} now",
        )
        pytest.fail(
            f"revision {revision}'s {direction} no longer sends the SQL pinned in {where}. A"
            " released revision must keep doing what it did (databases that ran it keep the"
            " old result): put the change in a new revision. A revision that reuses another's"
            " text (0003 and 0006 take 0001's) changes when that text does. Only if"
            f" {revision} is unreleased: delete its pins and run `{REGENERATE}`.\n" + "".join(diff),
            pytrace=False,
        )


def test_every_pin_belongs_to_a_revision() -> None:
    expected = {pin(revision, direction) for revision in _revisions() for direction in DIRECTIONS}
    stray = sorted(str(path.relative_to(REPO)) for path in set(PINS.glob("*")) - expected)
    assert not stray, f"pins of no revision (a released revision is never removed): {stray}"


def write_missing_pins() -> list[Path]:
    """Pin each revision that has no pin yet; an existing pin is never rewritten."""
    PINS.mkdir(parents=True, exist_ok=True)
    written = []
    for direction in DIRECTIONS:
        for revision, sql in offline_sql(direction).items():
            path = pin(revision, direction)
            if not path.exists():
                path.write_text(sql)
                written.append(path)
    return written


if __name__ == "__main__":
    written = write_missing_pins()
    for path in written:
        print(f"pinned {path.relative_to(REPO)}")
    if not written:
        print("every revision is pinned; to re-pin an unreleased one, delete its pins first")
