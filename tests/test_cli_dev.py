"""`inbox dev`, the main job: embedded PostgreSQL, receiver and worker, from one command —
from the repository's example config, and in a folder with nothing in it; and however it
ends, it leaves no PostgreSQL behind."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

from tests._wait import scalar, wait_for

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INBOX_")}
    return {**env, "PYTHONPATH": str(REPO), **extra}


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command as another terminal runs it: none of the test's INBOX_* environment."""
    return subprocess.run(
        command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )


def postgres_serving(pgdata: Path) -> list[int]:
    """Processes of a PostgreSQL server on ``pgdata`` (a /proc scan: the postmaster's
    command line names its data directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"postgres") and str(pgdata).encode() in argv:
            found.append(int(entry.name))
    return found


class Dev:
    """A running `inbox dev` (on a free port of its choosing) and its output. With
    ``session``, it leads a process group of its own, as a shell's job does, for signals
    sent to the whole group."""

    def __init__(
        self,
        cwd: Path,
        env: dict[str, str],
        *args: str,
        dev_args: tuple[str, ...] = ("--port", "0"),
        session: bool = False,
    ) -> None:
        # The output goes to a temporary file, never into cwd (the repository, for one test).
        self._out: IO[str] = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in stop()
            "w+", prefix="inbox-dev-", suffix=".log"
        )
        self.log_path = Path(self._out.name)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "inbox", *args, "dev", *dev_args],
            cwd=cwd,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=session,
        )

    def log(self) -> str:
        if self._out.closed:
            return self._final
        self._out.flush()
        return self.log_path.read_text()

    def wait_for_banner(self) -> str:
        def shown() -> bool:
            assert self.proc.poll() is None, self.log()
            return "Ctrl-C stops everything" in self.log()

        wait_for(shown, timeout=120, what="inbox dev's banner")
        return self.log()

    def receiver(self) -> str:
        """The receiver's base URL, as the banner gives it."""
        match = re.search(r"receiver\s+(http://\S+?)/webhooks/", self.log())
        assert match, self.log()
        return match.group(1)

    def stop(self, signum: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout=90)
        finally:
            self._final = self.log()
            self._out.close()


@pytest.fixture
def dev_folder(server_dir: Path) -> Iterator[Path]:
    folder = server_dir / "project"
    folder.mkdir()
    yield folder
    # However the test ended, no server of its own outlives it.
    for pid in postgres_serving(folder / ".inbox" / "pgdata"):
        os.kill(pid, signal.SIGKILL)


def test_dev_receives_a_signed_webhook_and_the_example_handler_records_it(
    tmp_path: Path, server_dir: Path
) -> None:
    config = tmp_path / "inbox.toml"
    config.write_text(
        (REPO / "config" / "inbox.toml")
        .read_text()
        .replace('data_dir = ".inbox"', f'data_dir = "{server_dir / "data"}"'),
        encoding="utf-8",
    )
    dev = Dev(REPO, _env(), "--config", str(config))
    try:
        dev.wait_for_banner()  # it comes once the receiver listens
        assert httpx.get(f"{dev.receiver()}/healthz").is_success
        match = re.search(r"database\s+(\S+)", dev.log())
        assert match, dev.log()
        database = match.group(1)

        # No --url: `inbox send` posts to the running dev's receiver (on the port it chose),
        # not to the config's port.
        send = [sys.executable, "-m", "inbox", "--config", str(config), "send", "stripe"]
        sent = _run(send, REPO)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert f"POST {dev.receiver()}/webhooks/stripe -> HTTP 200" in sent.stdout
        wait_for(
            lambda: scalar(database, "select count(*) from payments") == 1,
            timeout=60,
            what="the example handler's payment row",
        )
        assert scalar(database, "select outcome from inbox_attempts") == "processed"
    finally:
        code = dev.stop()  # Ctrl-C
    assert code == 0
    assert postgres_serving(server_dir / "data" / "pgdata") == []


def _banner_command(banner: str, after: str) -> tuple[list[str], Path]:
    """The command the banner prints on the line after ``after``, and the folder it names."""
    lines = banner.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(after))
    folder = Path(lines[at].rsplit(" in ", 1)[1].rstrip(":")) if " in " in lines[at] else None
    return shlex.split(lines[at + 1]), folder or Path.cwd()


def test_dev_in_an_empty_folder_runs_the_demo_and_its_banner_commands_work(
    dev_folder: Path,
) -> None:
    dev = Dev(dev_folder, _env(), session=True)
    try:
        banner = dev.wait_for_banner()
        assert postgres_serving(dev_folder / ".inbox" / "pgdata")  # the scan sees it running
        assert "handlers   processors.examples.handlers:router" in banner
        assert "sources    stripe, github, demo" in banner
        secrets_file = dev_folder / ".inbox" / "dev-secrets.json"
        assert secrets_file.stat().st_mode & 0o777 == 0o600
        for secret in re.findall(r'"(whsec_[^"]+|dev_[^"]+)"', secrets_file.read_text()):
            assert secret not in banner  # the banner names the file, never a secret

        # Exactly as printed, from another shell that has none of dev's environment.
        send, folder = _banner_command(banner, "send a signed test webhook")
        assert folder == dev_folder
        sent = _run(send, folder)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert "HTTP 200" in sent.stdout
        # Other settings in the same folder name their own receiver, not this dev's.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        other = dev_folder / "other.toml"
        other.write_text(
            f'[receiver]\nport = {free}\n\n[[sources]]\nname = "demo"\nverifier = "none"\n'
        )
        elsewhere = _run(
            [sys.executable, "-m", "inbox", "--config", str(other), "send", "demo"], folder
        )
        assert f"could not reach http://127.0.0.1:{free}/webhooks/demo" in elsewhere.stderr

        # The console is mounted, and its one-time link signs the user in.
        link = re.search(r"^  console +(http://\S+/login/token/\S+)", banner, re.MULTILINE)
        assert link is not None, banner
        with httpx.Client(follow_redirects=False) as client:
            signed_in = client.get(link.group(1))
            assert signed_in.status_code == 303, signed_in.text
            overview = client.get(link.group(1).split("/login/")[0] + "/")
            assert overview.status_code == 200
            assert 'id="whoami"' in overview.text
            assert client.get(link.group(1)).status_code != 303  # one time only

        look, _ = _banner_command(banner, "then see what happened")
        seen: list[subprocess.CompletedProcess[str]] = []

        def processed() -> bool:
            seen.append(_run(look, folder))
            return seen[-1].returncode == 0 and "processed" in seen[-1].stdout

        wait_for(processed, timeout=60, what="the banner's events list to say processed")
        assert "using the database of the running `inbox dev`" in seen[-1].stderr
        assert " stripe " in seen[-1].stdout
    finally:
        # Ctrl-C: the terminal sends SIGINT to the whole job; the worker, in a session of
        # its own, is stopped by `inbox dev` with the same signal.
        os.killpg(dev.proc.pid, signal.SIGINT)
        code = dev.stop()
    assert code == 0, dev.log()
    assert "signal_received                signal=SIGINT" in dev.log()
    assert "signal=SIGTERM" not in dev.log()
    assert postgres_serving(dev_folder / ".inbox" / "pgdata") == []
    assert not (dev_folder / ".inbox" / "dev-server.json").exists()


def _dev_fails(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = _run([sys.executable, "-m", "inbox", "dev", "--port", "0", *args], folder)
    assert done.returncode == 2, done.stdout + done.stderr
    return done


def test_handlers_that_do_not_import_stop_dev_before_anything_starts(dev_folder: Path) -> None:
    (dev_folder / "inbox.toml").write_text('[app]\nrouter = "my_handlers:router"\n')
    (dev_folder / "my_handlers.py").write_text("import no_such_module\n")
    done = _dev_fails(dev_folder)
    (line,) = done.stderr.strip().splitlines()
    assert "my_handlers:router (from [app] router in inbox.toml)" in line
    assert "no_such_module" in line
    assert not (dev_folder / ".inbox" / "pgdata").exists()  # no server was ever started


def test_a_failure_after_the_server_started_leaves_no_postgres_behind(dev_folder: Path) -> None:
    (dev_folder / "inbox.toml").write_text('[app]\ntables = ["broken.sql"]\n')
    (dev_folder / "broken.sql").write_text("create tabel oops (id int);\n")
    done = _dev_fails(dev_folder)
    assert "broken.sql" in done.stderr
    assert "syntax error" in done.stderr
    pgdata = dev_folder / ".inbox" / "pgdata"
    assert (pgdata / "PG_VERSION").exists()  # the server had started
    assert postgres_serving(pgdata) == []


def test_a_worker_that_dies_stops_dev_and_its_server(dev_folder: Path) -> None:
    (dev_folder / "inbox.toml").write_text('[app]\nrouter = "dying:router"\n')
    # Imports fine where `inbox dev` checks it, dies in the worker (which has the URL).
    (dev_folder / "dying.py").write_text(
        "import os\n"
        "from processors import Router\n"
        "router = Router()\n"
        "if os.environ.get('INBOX_DATABASE__URL'):\n"
        "    raise SystemExit(3)\n"
    )
    done = _run([sys.executable, "-m", "inbox", "dev", "--port", "0"], dev_folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the worker exited with code 3" in done.stderr
    assert postgres_serving(dev_folder / ".inbox" / "pgdata") == []


def _processes(folder: Path, word: bytes) -> list[int]:
    """Processes working in ``folder`` whose command line holds ``word``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            cwd = (entry / "cwd").resolve()
        except OSError:
            continue
        if cwd == folder.resolve() and word in argv:
            found.append(int(entry.name))
    return found


WORKER = b"\0worker\0"
GUARDIAN = b"inbox._cli.dev.guard"


def _wait_for_worker(dev: Dev, folder: Path) -> list[int]:
    wait_for(lambda: "worker_started" in dev.log(), timeout=60, what="the worker to start")
    workers = _processes(folder, WORKER)
    assert len(workers) == 1, workers
    return workers


def _nothing_left(folder: Path) -> bool:
    pgdata = folder / ".inbox" / "pgdata"
    return not (postgres_serving(pgdata) or _processes(folder, WORKER))


def test_a_killed_dev_leaves_nothing_running_and_the_next_one_starts_clean(
    dev_folder: Path,
) -> None:
    dev = Dev(dev_folder, _env())
    dev.wait_for_banner()
    _wait_for_worker(dev, dev_folder)
    assert postgres_serving(dev_folder / ".inbox" / "pgdata")

    dev.proc.kill()  # no chance to clean up: its guardian does
    dev.stop()
    wait_for(
        lambda: _nothing_left(dev_folder) and not _processes(dev_folder, GUARDIAN),
        timeout=60,
        what="the guardian to stop the worker and the server, and end",
    )
    assert not (dev_folder / ".inbox" / "dev-server.json").exists()

    again = Dev(dev_folder, _env())
    try:
        assert "left running" not in again.wait_for_banner()
    finally:
        assert again.stop() == 0
    assert _nothing_left(dev_folder)


def test_a_server_left_behind_is_reported_and_replaced_not_adopted(dev_folder: Path) -> None:
    dev = Dev(dev_folder, _env())
    dev.wait_for_banner()
    [worker] = _wait_for_worker(dev, dev_folder)
    # Everything of it killed at once, the guardian first: the server is left running.
    for pid in [*_processes(dev_folder, GUARDIAN), dev.proc.pid, worker]:
        os.kill(pid, signal.SIGKILL)
    dev.stop()
    pgdata = dev_folder / ".inbox" / "pgdata"
    left = int((pgdata / "postmaster.pid").read_text().split()[0])
    assert left in postgres_serving(pgdata)

    again = Dev(dev_folder, _env())
    try:
        banner = again.wait_for_banner()
        assert f"stopped a PostgreSQL server (pid {left}) left running" in banner
        assert left not in postgres_serving(pgdata)
    finally:
        assert again.stop() == 0
    assert _nothing_left(dev_folder)


def test_closing_the_terminal_stops_everything(dev_folder: Path) -> None:
    dev = Dev(dev_folder, _env(), session=True)
    dev.wait_for_banner()
    _wait_for_worker(dev, dev_folder)
    os.killpg(dev.proc.pid, signal.SIGHUP)  # what a closed terminal sends its job
    assert dev.stop() == 0, dev.log()
    assert "worker_stopped" in dev.log()  # stopped, not killed: it finished its batch
    assert _nothing_left(dev_folder)


def test_a_taken_port_is_one_line_before_anything_starts(dev_folder: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _dev_fails(dev_folder, "--port", str(port))
    (line,) = done.stderr.strip().splitlines()
    assert f"127.0.0.1:{port} is already in use" in line
    assert "--port" in line
    assert "is running" not in done.stdout
    assert not (dev_folder / ".inbox" / "pgdata").exists()  # no server was started


HANDLERS = """\
from processors import Router

router = Router()
VERSION = {version!r}


@router.on("demo", "*")
async def remember(event, conn):
    await conn.execute(
        "insert into seen (event_id, version) values (%s, %s)", [event.id, VERSION]
    )
"""


def test_the_worker_runs_the_handlers_as_they_are_saved(dev_folder: Path) -> None:
    (dev_folder / "inbox.toml").write_text(
        '[app]\nrouter = "handlers:router"\ntables = ["tables.sql"]\n\n'
        '[[sources]]\nname = "demo"\nverifier = "standard-webhooks"\n'
    )
    (dev_folder / "tables.sql").write_text(
        "create table if not exists seen (event_id bigint primary key, version text);\n"
    )
    handlers = dev_folder / "handlers.py"
    handlers.write_text(HANDLERS.format(version="one"))
    dev = Dev(dev_folder, _env())
    try:
        banner = dev.wait_for_banner()
        assert f"reload     the worker restarts when a .py file changes in {handlers}" in banner
        match = re.search(r"database\s+(\S+)", banner)
        assert match, banner
        database = match.group(1)

        def send_and_see(version: str) -> None:
            sent = _run([sys.executable, "-m", "inbox", "send", "demo"], dev_folder)
            assert sent.returncode == 0, sent.stdout + sent.stderr
            found = re.search(r"event id: (\d+)", sent.stdout)
            assert found, sent.stdout
            event_id = int(found.group(1))
            wait_for(
                lambda: (
                    scalar(database, "select version from seen where event_id = %s", [event_id])
                    == version
                ),
                timeout=60,
                what=f"event {event_id} to be handled by version {version}",
            )

        send_and_see("one")
        handlers.write_text(HANDLERS.format(version="two"))
        wait_for(lambda: dev.log().count("worker_started") == 2, timeout=60, what="a restart")
        assert "handlers.py changed; restarting the worker" in dev.log()
        send_and_see("two")

        handlers.write_text("this is not python\n")
        wait_for(lambda: "no worker runs until they load" in dev.log(), timeout=60, what="it")
        assert _processes(dev_folder, WORKER) == []
        handlers.write_text(HANDLERS.format(version="three"))
        wait_for(lambda: dev.log().count("worker_started") == 3, timeout=60, what="a restart")
        send_and_see("three")
    finally:
        assert dev.stop() == 0, dev.log()
    assert _nothing_left(dev_folder)
