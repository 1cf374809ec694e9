"""A library is a quiet guest: inside a host that configured no logging, inbox prints nothing;
once the host configures ``logging``, inbox's records arrive through it; the host's garbage
collector settings stay the host's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

HOST = textwrap.dedent(
    """
    import gc, logging, sys
    thresholds = gc.get_threshold()
    if sys.argv[1] == "logging":
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(message)s")
    from starlette.testclient import TestClient
    from inbox import InboxWriter, Settings, create_app

    url = sys.argv[2]
    with InboxWriter(url) as writer:
        assert writer.write(source="host", key="k1", body=b"{}").is_new
    settings = Settings(database={"url": url}, sources=[{"name": "open", "verifier": "none"}])
    with TestClient(create_app(settings)) as client:
        reply = client.post("/webhooks/open", content=b'{"id": "evt_1"}',
                            headers={"content-type": "application/json"})
        assert reply.status_code == 200, reply.text
    # The collector's settings are the host's: only `inbox serve`'s own process tunes them.
    assert gc.get_threshold() == thresholds, gc.get_threshold()
    """
)


def _host(mode: str, db_url: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-c", HOST, mode, db_url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_a_host_without_logging_configured_gets_nothing_on_stdout(db_url: str) -> None:
    done = _host("quiet", db_url)
    assert done.stdout == ""
    # Python's last-resort handler shows warnings (the open source's) on stderr, never info.
    assert "webhook_accepted" not in done.stderr
    assert "unverified_source_configured" in done.stderr


def test_a_host_that_configured_logging_gets_inbox_records_through_it(db_url: str) -> None:
    done = _host("logging", db_url)
    assert done.stdout == ""
    accepted = [line for line in done.stderr.splitlines() if line.startswith("inbox.receiver ")]
    assert accepted, done.stderr
    assert any("webhook_accepted" in line and "source='open'" in line for line in accepted)
