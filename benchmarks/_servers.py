"""The HTTP servers the receiver benchmarks drive: ``inbox serve`` with one Standard Webhooks
source, the hand-written receiver (``benchmarks._handwritten``) with the same secret, and a
no-op endpoint on the same uvicorn (the load driver's own ceiling); and the Django view and the
Flask blueprint under gunicorn's threads, as sync apps are served.

Each runs in a process of its own, as in production (the driver must not share its event
loop or its core with the server it measures):

    python -m benchmarks._servers noop PORT     # the no-op endpoint, until SIGTERM
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchmarks._common import DIRECT, REPO, Route, child_env
from benchmarks._http_load import SECRET, SOURCE
from inbox._core.config.settings import DatabaseSettings

STOP_SECONDS = 30.0
HANDWRITTEN_APP = "hand-written receiver"
TOLERANCE_SECONDS = 3600


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server for {url} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)  # not listening yet
    raise RuntimeError(f"{url} never became healthy")


def serve_config(db_url: str, port: int) -> str:
    """inbox.toml for `inbox serve`: the database, the port, one standard-webhooks source."""
    return (
        f"[database]\nurl = {json.dumps(db_url)}\n"
        f'[receiver]\nhost = "127.0.0.1"\nport = {port}\n'
        f"[[sources]]\nname = {json.dumps(SOURCE)}\n"
        f'verifier = "standard-webhooks"\nsecrets = [{json.dumps(SECRET)}]\n'
        # The driver signs every request before its clock starts; a long run must not age
        # them out of the replay window (its check costs the same either way).
        f"tolerance_seconds = {TOLERANCE_SECONDS}\n"
    )


@dataclass(frozen=True)
class Served:
    """A server the benchmark started: where to post, and its process (for its CPU time)."""

    url: str
    pid: int
    application_name: str  # what its database connections call themselves

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server and every process under it, so far."""
        return sum(cpu_seconds(pid) for pid in process_tree(self.pid))


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it (from /proc)."""
    pids, i = [pid], 0
    while i < len(pids):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pids[i]}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        i += 1
    return pids


def backends_cpu(conn: psycopg.Connection[Any], application_name: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend of ``conn``'s database that reports
    ``application_name`` (the server runs on this machine: /proc is its), by pid."""
    rows = conn.execute(
        "select pid from pg_stat_activity"
        " where datname = current_database() and application_name = %s",
        (application_name,),
    ).fetchall()
    return {pid: cpu_seconds(pid) for (pid,) in rows}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0  # gone (or no /proc): counts nothing
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _running(
    cmd: list[str], log: Path, health: str, env: Mapping[str, str] | None = None
) -> Iterator[int]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            env=child_env(**(env or {})),
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C reaches the driver, which stops the server
        )
    try:
        wait_healthy(health, proc)
        yield proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def inbox_serve(
    db_url: str, logs: Path, workers: int = 1, route: Route = DIRECT
) -> Iterator[Served]:
    """Run `inbox serve` on ``db_url`` (``--workers`` processes, reaching it by ``route``);
    yield its webhook URL."""
    port = free_port()
    config = logs / f"serve-{port}.toml"
    config.write_text(serve_config(route.url(db_url), port), encoding="utf-8")
    cmd = [sys.executable, "-m", "inbox", "--config", str(config), "serve"]
    if workers != 1:
        cmd += ["--workers", str(workers)]
    health = f"http://127.0.0.1:{port}/healthz"
    with _running(cmd, logs / f"serve-{port}.log", health, route.env(db_url)) as pid:
        yield Served(f"http://127.0.0.1:{port}/webhooks/{SOURCE}", pid, "pg-inbox receiver")


@contextlib.contextmanager
def handwritten(db_url: str, logs: Path) -> Iterator[Served]:
    """Run the hand-written receiver on ``db_url`` with `inbox serve`'s pool size; yield its
    webhook URL."""
    port = free_port()
    pool = str(DatabaseSettings().pool_max_size)
    dsn = psycopg.conninfo.make_conninfo(db_url, application_name=HANDWRITTEN_APP)
    cmd = [sys.executable, "-m", "benchmarks._handwritten", str(port), dsn, SECRET, pool]
    with _running(cmd, logs / f"handwritten-{port}.log", f"http://127.0.0.1:{port}/healthz") as pid:
        yield Served(f"http://127.0.0.1:{port}/webhooks/{SOURCE}", pid, HANDWRITTEN_APP)


# The WSGI apps the benchmark serves (benchmarks/_flask_app.py, benchmarks/_django_site.py),
# by the name its command line gives them, with the name its report gives them.
WSGI_APPS = {
    "flask": ("benchmarks._flask_app:app", "Flask"),
    "django": ("benchmarks._django_site:application", "Django"),
    "handwritten": ("benchmarks._handwritten_wsgi:app", "hand-written Flask"),
}
# gunicorn's shape for each app unless the command line names one: the best of those tried
# on 2 cores (benchmarks/ANALYSIS.md), as the hand-written receiver gets its best pool. One
# process: a second one adds its own pool and splits the groups, and PostgreSQL and the
# driver need the other core; many threads: a thread holds its request while its write
# waits for a group, so more threads make larger groups.
BEST_SHAPE = {"flask": (1, 32), "django": (1, 32), "handwritten": (1, 32)}


@dataclass(frozen=True)
class WsgiApp:
    """A WSGI app of ``WSGI_APPS`` under gunicorn's gthread worker: ``workers`` processes of
    ``threads`` threads each."""

    app: str
    workers: int
    threads: int

    @classmethod
    def parse(cls, text: str) -> WsgiApp:
        """``flask`` (its best shape) or ``flask:2x16`` (2 workers of 16 threads)."""
        app, _, shape = text.partition(":")
        if app not in WSGI_APPS:
            raise ValueError(f"{app!r}: not one of {', '.join(WSGI_APPS)}")
        workers, _, threads = shape.partition("x")
        if not shape:
            return cls(app, *BEST_SHAPE[app])
        return cls(app, int(workers), int(threads))

    @property
    def label(self) -> str:
        return f"{WSGI_APPS[self.app][1]} (gunicorn {self.workers}x{self.threads})"


@contextlib.contextmanager
def wsgi(target: WsgiApp, db_url: str, logs: Path) -> Iterator[Served]:
    """Serve ``target`` with gunicorn, configured as `inbox serve` is (the same inbox.toml);
    yield its webhook URL. Its writer's connections call themselves what `inbox serve`'s
    do: give it a database of its own to tell them apart."""
    port = free_port()
    config = logs / f"{target.app}-{port}.toml"
    config.write_text(serve_config(db_url, port), encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "--worker-class=gthread",
        f"--workers={target.workers}",
        f"--threads={target.threads}",
        f"--bind=127.0.0.1:{port}",
        "--log-level=warning",
        "--graceful-timeout=10",
        WSGI_APPS[target.app][0],
    ]
    env = {"INBOX_CONFIG": str(config)}
    name = "pg-inbox receiver"
    if target.app == "handwritten":
        name = HANDWRITTEN_APP
        env = {
            "BENCH_HANDWRITTEN_DSN": psycopg.conninfo.make_conninfo(db_url, application_name=name),
            "BENCH_HANDWRITTEN_SECRET": SECRET,
            "BENCH_HANDWRITTEN_POOL": str(DatabaseSettings().pool_max_size),
        }
    health = f"http://127.0.0.1:{port}/healthz"
    with _running(cmd, logs / f"{target.app}-{port}.log", health, env) as pid:
        yield Served(f"http://127.0.0.1:{port}/inbox/webhooks/{SOURCE}", pid, name)


@contextlib.contextmanager
def noop_endpoint(logs: Path) -> Iterator[Served]:
    """Run the no-op endpoint; yield its URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "benchmarks._servers", "noop", str(port)]
    url = f"http://127.0.0.1:{port}/"
    with _running(cmd, logs / f"noop-{port}.log", url) as pid:
        yield Served(url, pid, "")


def run_noop(port: int) -> None:
    """A no-op ASGI endpoint with `inbox serve`'s uvicorn settings: reads the body, says 200."""
    import uvicorn

    reply = b'{"status":"accepted"}'

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(reply)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": reply})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        access_log=False,
        log_level="warning",
        server_header=False,
    )


if __name__ == "__main__":
    if sys.argv[1:2] != ["noop"] or len(sys.argv) != 3:
        raise SystemExit("usage: python -m benchmarks._servers noop PORT")
    run_noop(int(sys.argv[2]))
