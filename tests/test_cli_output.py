"""Small things the command line owes a person: its version, whole keys in a pipe, and a
test webhook labelled with what its body is."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import ClassVar

import pytest

from inbox import InboxWriter
from tests.operator._support import env_for, inbox

REPO = Path(__file__).resolve().parent.parent


def test_version_is_the_installed_distributions(db_url: str) -> None:
    done = inbox(db_url, "--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"inbox {version('pg-inbox')}"


def test_events_list_in_a_pipe_prints_whole_keys_that_events_show_accepts(db_url: str) -> None:
    key = "evt_" + "k" * 150  # far wider than any terminal's column
    with InboxWriter(db_url) as writer:
        writer.write("stripe", key, b'{"id": 1}', event_type="invoice.paid")
    env = env_for(db_url)
    env.pop("COLUMNS", None)
    listed = inbox(db_url, "events", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert key in listed.stdout
    assert "…" not in listed.stdout
    shown = inbox(db_url, "events", "show", f"stripe:{key}", env=env)
    assert shown.returncode == 0, shown.stderr


class _Recorder(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]]  # set per server (the receiver fixture)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.received.append((self.headers["content-type"], body))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"status": "accepted"}')

    def log_message(self, format: str, *args: object) -> None:
        return None  # the test reads what arrived, not the server's access log


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """A stand-in receiver that records each POST's content type and body."""
    received: list[tuple[str, bytes]] = []
    handler = type("Recorder", (_Recorder,), {"received": received})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/webhooks/stripe", received
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.mark.parametrize(
    ("content", "options", "expected"),
    [
        (b'{"id": "evt_1", "type": "invoice.paid"}', [], "application/json"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", [], "application/octet-stream"),
        (b"a,b\n1,2\n", ["--content-type", "text/csv"], "text/csv"),
    ],
)
def test_send_labels_a_file_by_what_it_is(
    db_url: str,
    tmp_path: Path,
    receiver: tuple[str, list[tuple[str, bytes]]],
    content: bytes,
    options: list[str],
    expected: str,
) -> None:
    url, received = receiver
    path = tmp_path / "body.dat"
    path.write_bytes(content)
    config = str(REPO / "config" / "inbox.toml")
    sent = inbox(
        db_url, "--config", config, "send", "stripe", "--file", str(path), "--url", url, *options
    )
    assert sent.returncode == 0, sent.stderr
    assert received == [(expected, content)]
