"""Hostile input never stores and never crashes: hypothesis against the real app and database.

With the database up, no response is a 5xx; with it down, the only 5xx is 503. No request
without a valid signature ever produces a row (only the `none` source stores unsigned ones).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import psycopg
import psycopg_pool.base
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from inbox import Settings, create_app

Make = Callable[..., Settings]

SIGNATURE_HEADERS = [
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "stripe-signature",
    "x-hub-signature-256",
    "x-github-delivery",
    "x-slack-signature",
    "x-slack-request-timestamp",
    "wechatpay-serial",
    "wechatpay-signature",
    "wechatpay-timestamp",
    "wechatpay-nonce",
    "content-type",
    "content-encoding",
]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-16",
    "application/x-www-form-urlencoded",
    "application/x-www-form-urlencoded; charset=gbk",
    "application/x-www-form-urlencoded; charset=no-such-charset",
    "text/plain; charset=latin-1",
    "multipart/form-data; boundary=x",
]
SOURCES = ["sw", "stripe", "github", "slack", "alipay", "wechatpay", "small", "open"]

header_value = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=200),
    st.binary(max_size=100).map(lambda b: bytes(c for c in b if c >= 0x20 and c != 0x7F)),
    st.integers(min_value=0, max_value=1 << 40).map(str),
    st.sampled_from(["v1,AAAA", "v1,", "t=1,v1=00", "sha256=00", "v0=00", "a" * 20_000]),
)
headers = st.dictionaries(
    st.one_of(
        st.sampled_from(SIGNATURE_HEADERS),
        st.from_regex(r"\Ax-[a-z0-9-]{1,30}\Z"),
    ),
    header_value,
    max_size=8,
).flatmap(lambda h: st.sampled_from(CONTENT_TYPES).map(lambda ct: {"content-type": ct, **h}))
bodies = st.one_of(
    st.binary(max_size=300),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    ).map(lambda v: __import__("json").dumps(v).encode()),
    st.text(max_size=200).map(lambda t: t.encode("utf-16")),
    st.just(b"notify_id=1&sign=AAAA&sign_type=RSA2&charset=gbk"),
)
requests = st.fixed_dictionaries(
    {
        "method": st.sampled_from(["POST", "POST", "POST", "GET", "PUT", "DELETE", "PATCH"]),
        "source": st.one_of(st.sampled_from(SOURCES), st.from_regex(r"\A[a-z%.~-]{1,12}\Z")),
        "headers": headers,
        "body": bodies,
    }
)


def _send(client: TestClient, request: dict[str, object]) -> int:
    response = client.request(
        str(request["method"]),
        f"/webhooks/{request['source']}",
        content=request["body"],  # type: ignore[arg-type]
        headers=request["headers"],  # type: ignore[arg-type]
    )
    return response.status_code


def _fuzz(client: TestClient, examples: int, *, allowed: Callable[[int], bool]) -> set[int]:
    """Send ``examples`` generated requests, each answered with a status ``allowed``
    accepts; the statuses seen."""
    statuses: set[int] = set()

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(requests)
    def check(request: dict[str, object]) -> None:
        status = _send(client, request)
        statuses.add(status)
        assert allowed(status), (status, request)

    check()
    return statuses


def _rows_by_source(db_url: str) -> dict[str, int]:
    with psycopg.connect(db_url) as conn:
        rows = conn.execute("select source, count(*) from inbox_events group by source")
        return {source: int(n) for source, n in rows.fetchall()}


# psycopg_pool's background thread draws from the global `random` (the jitter of a new
# connection's lifetime) whenever it connects, which Hypothesis takes for a strategy using
# `random` if it happens while an example is drawn: a flaky warning, not a finding.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_fuzzed_requests_never_store_unsigned_and_never_5xx(
    make_settings: Make, db_url: str, receiver_url: str
) -> None:
    with TestClient(create_app(make_settings(receiver_url))) as client:
        statuses = _fuzz(client, 100, allowed=lambda status: status < 500)
    assert set(_rows_by_source(db_url)) <= {"open"}
    assert statuses & {401, 404}  # the fuzzing reached the checks it is meant to exercise


def test_fuzzed_requests_with_the_database_down_only_ever_503(
    make_settings: Make, unused_tcp_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the server down the writer's pool keeps reconnecting in the app's thread, and
    # psycopg_pool jitters each delay with the global `random`. Hypothesis takes any change
    # of the global random state while it draws an example for the strategy's own use of it,
    # and fails the test (CI at 4da08ea): the pool's jitter gets a generator of its own.
    monkeypatch.setattr(psycopg_pool.base, "random", random.Random(0).random)
    down = f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres"
    with TestClient(create_app(make_settings(down, write_timeout_seconds=0.2))) as client:
        _fuzz(client, 40, allowed=lambda status: status < 500 or status == 503)
        # the unverified source reaches the write, which can only fail
        assert (
            _send(client, {"method": "POST", "source": "open", "headers": {}, "body": b"x"}) == 503
        )
