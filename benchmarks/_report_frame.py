"""One benchmark run's frame, the same for every driver: clean stops on signals, the report's
header (what was run, on what, how to repeat it), the load before and after, and the report
written where ``--out`` says. A driver's ``main`` measures; this says how it was measured.

A driver that is one figure of ``python -m benchmarks all`` is a ``Driver``: its command
line, its measurement and its section, so that ``python -m benchmarks NAME`` and ``all`` run
the same code from the same command line (``all`` parses the command its report prints)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from benchmarks._common import (
    OUT_DIR,
    command_line,
    loadavg,
    postgres_server,
    run_facts,
    server_facts,
    stop_cleanly_on_signals,
    write_report,
)

__all__ = ["Driver", "Report", "command_parser", "run_driver"]


def command_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """A driver's command line, its help the module's docstring as written (its tables)."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )


class Report:
    """Start one with ``Report(module, title, argv)`` before measuring (``argv`` None: the
    command line's), measure on its ``server()``, ``finish`` with the sections."""

    def __init__(
        self, module: str, title: str, argv: Sequence[str] | None, *, name: str = ""
    ) -> None:
        """``name``: the benchmark's name after ``python -m MODULE`` in the command line."""
        stop_cleanly_on_signals()
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self._module = module
        self._command = [name] if name else []
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
        command = command_line(self._module, [*self._command, *self.argv])
        self._header += [*run_facts(command, server_facts(server), where), *more]
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


R = TypeVar("R")


def _always(result: Any) -> bool:
    return True


@dataclass(frozen=True)
class Driver(Generic[R]):
    """A benchmark that is one figure: ``python -m benchmarks NAME`` runs it alone, ``all``
    as one section of its report. Its report's title is its docstring's first paragraph;
    its command line has --runs (unless ``runs`` is None), --quick (when ``quick`` names
    the sizes of a smoke run), its ``options`` and --out."""

    name: str
    doc: str | None  # the module's docstring: the --help, and the title
    options: Callable[[argparse.ArgumentParser], None]  # adds its own options
    measure: Callable[[str, argparse.Namespace, Path], R]  # (server, its args, a logs folder)
    render: Callable[[R], list[str]]  # its section: "## title" first
    runs: int | None = 3  # the default of --runs, the runs of which it reports the median
    quick: Mapping[str, object] = field(default_factory=dict)
    ok: Callable[[R], bool] = _always  # whether its command exits 0

    @property
    def title(self) -> str:
        first = (self.doc or self.name).strip().split("\n\n", 1)[0]
        return "# " + " ".join(first.split())

    def parse_args(self, argv: Sequence[str]) -> argparse.Namespace:
        p = command_parser(f"python -m benchmarks {self.name}", self.doc)
        if self.runs is not None:
            p.add_argument("--runs", type=int, default=self.runs, help="runs (the median)")
        if self.quick:
            p.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
        self.options(p)
        p.add_argument("--out", type=Path, default=OUT_DIR / f"{self.name}.md", help="the report")
        args = p.parse_args(argv)
        if self.quick and args.quick:
            vars(args).update(self.quick)
        return args


def run_driver(driver: Driver[Any], argv: Sequence[str] | None) -> int:
    """``python -m benchmarks NAME``: the driver's command line parsed, measured on
    ``--database-url`` when it has one (else the server ``postgres_server`` finds), its
    report printed and written to --out."""
    report = Report("benchmarks", driver.title, argv, name=driver.name)
    args = driver.parse_args(report.argv)
    with report.server(getattr(args, "database_url", None)) as (server, logs):
        result = driver.measure(server, args, logs)
    report.finish(args.out, [driver.render(result)])
    return 0 if driver.ok(result) else 1
