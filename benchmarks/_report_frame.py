"""One benchmark run's frame, the same for every driver: clean stops on signals, the report's
header (what was run, on what, how to repeat it), the load before and after, and the report
written where ``--out`` says. A driver's ``main`` measures; this says how it was measured."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from benchmarks._common import (
    command_line,
    loadavg,
    postgres_server,
    run_facts,
    server_facts,
    stop_cleanly_on_signals,
    write_report,
)

__all__ = ["Report"]


class Report:
    """Start one with ``Report(module, title, argv)`` before measuring (``argv`` None: the
    command line's), measure on its ``server()``, ``finish`` with the sections."""

    def __init__(self, module: str, title: str, argv: Sequence[str] | None) -> None:
        stop_cleanly_on_signals()
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self._module = module
        self._header = [title, ""]
        self._load_before = loadavg()
        self._started = time.monotonic()

    @contextmanager
    def server(self, url: str | None = None, *more: str) -> Iterator[tuple[str, Path]]:
        """The PostgreSQL server to measure on (``url``, else the one ``postgres_server``
        finds), described in the header, and a folder for the run's logs (removed after)."""
        with tempfile.TemporaryDirectory(prefix="inbox-bench-logs-") as logs:
            if url:
                self._describe(url, "--database-url", *more)
                yield url, Path(logs)
                return
            with postgres_server() as (found, where):
                self._describe(found, where, *more)
                yield found, Path(logs)

    def _describe(self, server: str, where: str, *more: str) -> None:
        """The header's facts of ``server`` (and ``more`` bullet lines), printed at once so a
        long run says what it measures before it ends."""
        facts = server_facts(server)
        self._header += [*run_facts(command_line(self._module, self.argv), facts, where), *more]
        print("\n".join(self._header), flush=True)

    def finish(self, out: Path, sections: Sequence[Sequence[str]], *more: str) -> None:
        """Print and write the report: the header, the load, ``more`` bullet lines, then
        ``sections`` (each a list of lines) separated by blank lines."""
        self._header.append(
            f"- load average (1/5/15 min): {self._load_before} before, {loadavg()} after;"
            f" wall time {time.monotonic() - self._started:.0f} s"
        )
        parts = ["\n".join([*self._header, *more]), *("\n".join(s) for s in sections)]
        text = "\n\n".join(parts) + "\n"
        print(f"\n{text}")
        write_report(out, text)
