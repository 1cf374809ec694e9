"""Sources, keys and helpers shared by the receiver tests (all against a real PostgreSQL)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
import pytest

from inbox import Settings
from inbox._receiving.samples import SampleRequest, build_sample
from tests._keys import RsaPair, make_rsa_pair

SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
GITHUB_SECRET = "It's a Secret to Everybody"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
STRIPE_SECRET = "whsec_test_stripe"
# A Meta source answers the GET subscription with the token in this variable (set it first:
# the receiver reads it at start-up).
META_TOKEN_ENV = "INBOX_TEST_META_VERIFY_TOKEN"
META_TOKEN = "meatyhamhock"
META_SOURCE: dict[str, Any] = {
    "name": "meta",
    "verifier": "meta",
    "secrets": ["meta-app-secret"],
    "options": {"verify_token_env": META_TOKEN_ENV},
}


@pytest.fixture(scope="session")
def rsa_pair() -> RsaPair:
    return make_rsa_pair("receiver")


def source_tables(rsa_pair: RsaPair) -> list[dict[str, Any]]:
    """One source per shape the receiver treats differently."""
    return [
        {"name": "sw", "verifier": "standard-webhooks", "secrets": [SW_SECRET]},
        {"name": "stripe", "verifier": "stripe", "secrets": [STRIPE_SECRET]},
        {"name": "github", "verifier": "github", "secrets": [GITHUB_SECRET]},
        {"name": "slack", "verifier": "slack", "secrets": [SLACK_SECRET]},
        {
            "name": "alipay",
            "verifier": "alipay",
            "public_keys": [rsa_pair.public_pem],
            "private_key": rsa_pair.private_pem,
        },
        {
            "name": "wechatpay",
            "verifier": "wechatpay",
            "public_keys": {"SERIAL1": rsa_pair.public_pem},
            "private_key": rsa_pair.private_pem,
        },
        {
            "name": "small",
            "verifier": "standard-webhooks",
            "secrets": [SW_SECRET],
            "max_body_bytes": 64,
        },
        {"name": "open", "verifier": "none"},
    ]


@pytest.fixture
def make_settings(rsa_pair: RsaPair) -> Callable[..., Settings]:
    def make(
        db_url: str | None = None, *, sources: Sequence[dict[str, Any]] = (), **receiver: Any
    ) -> Settings:
        return Settings(
            database={"url": db_url},
            sources=[*source_tables(rsa_pair), *sources],
            receiver={"write_timeout_seconds": 2.0, **receiver},
        )

    return make


def signed(
    settings: Settings,
    source: str,
    *,
    body: bytes | None = None,
    now: float | None = None,
    event_type: str | None = None,
    url: str = "http://testserver/webhooks/{source}",
) -> SampleRequest:
    """A request that ``source``'s verifier accepts (signed at ``now``, default: now)."""
    config = settings.source(source)
    assert config is not None
    return build_sample(
        config,
        url=url.format(source=source),
        now=time.time() if now is None else now,
        body=body,
        event_type=event_type,
    )


def event_rows(db_url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(db_url) as conn:
        return conn.execute(
            "select id, source, idempotency_key, event_type, verifier, headers, body"
            " from inbox_events order by id"
        ).fetchall()


def count_events(db_url: str) -> int:
    with psycopg.connect(db_url) as conn:
        row = conn.execute("select count(*) from inbox_events").fetchone()
        assert row is not None
        return int(row[0])
