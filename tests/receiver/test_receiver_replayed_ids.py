"""A captured delivery re-sent with a new, unsigned id: the hmac recipe warns at start-up when
its id header is outside the signature, and ``key_from = "body-sha256"`` makes the re-sent
body a duplicate whatever its id and event-type headers say (GitHub, Shopify, Twilio)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from inbox import Settings, create_app
from tests.receiver.conftest import GITHUB_SECRET, count_events, signed

RECIPE = {"header": "x-signature", "id_header": "x-delivery-id"}


def _settings(db_url: str, *sources: dict[str, Any]) -> Settings:
    return Settings(
        database={"url": db_url}, sources=list(sources), receiver={"write_timeout_seconds": 2}
    )


def _unsigned_warnings(settings: Settings) -> list[dict[str, Any]]:
    with capture_logs() as logs:
        create_app(settings)
    return [e for e in logs if e["event"] == "source_key_unsigned"]


def test_a_recipe_whose_id_header_is_not_signed_warns_once_at_start_up(
    receiver_url: str,
) -> None:
    settings = _settings(
        receiver_url, {"name": "acme", "verifier": "hmac", "secrets": ["s"], "options": RECIPE}
    )
    [warning] = _unsigned_warnings(settings)
    assert warning["log_level"] == "warning"
    assert (warning["source"], warning["header"]) == ("acme", "x-delivery-id")
    assert "body-sha256" in warning["hint"]


@pytest.mark.parametrize(
    "source",
    [
        {"options": {**RECIPE, "signed_content": "{id}.{body}"}},  # the id is signed
        {"options": RECIPE, "key_from": "body-sha256"},  # the key is not the header
        {"options": {"header": "x-signature"}},  # no id header: the body's hash
    ],
)
def test_a_recipe_that_signs_its_key_does_not_warn(
    receiver_url: str, source: dict[str, Any]
) -> None:
    settings = _settings(
        receiver_url, {"name": "acme", "verifier": "hmac", "secrets": ["s"], **source}
    )
    assert _unsigned_warnings(settings) == []


def _github(key_from: str | None = None) -> dict[str, Any]:
    source = {"name": "github", "verifier": "github", "secrets": [GITHUB_SECRET]}
    return source if key_from is None else {**source, "key_from": key_from}


def _replayed(settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """A signed GitHub delivery, then the same bytes re-sent with a new delivery id and
    another event type (neither is signed)."""
    first = signed(settings, "github", body=b'{"action": "opened", "number": 7}')
    headers = {**first.headers, "x-github-event": "pull_request"}
    with TestClient(create_app(settings)) as client:
        original = client.post("/webhooks/github", content=first.body, headers=headers)
        replay_headers = {
            **headers,
            "x-github-delivery": "4a5c7e40-0000-11f0-8000-000000000000",
            "x-github-event": "issues",  # the route a replayer picks
        }
        replay = client.post("/webhooks/github", content=first.body, headers=replay_headers)
    assert original.status_code == replay.status_code == 200
    return original.json(), replay.json()


def test_by_default_a_replay_with_a_new_delivery_id_is_a_new_event(
    receiver_url: str, db_url: str
) -> None:
    # What docs/security.md warns of: GitHub signs the body only.
    original, replay = _replayed(_settings(receiver_url, _github()))
    assert (original["status"], replay["status"]) == ("accepted", "accepted")
    assert count_events(db_url) == 2


def test_with_key_from_body_sha256_the_replay_is_a_duplicate(
    receiver_url: str, db_url: str
) -> None:
    original, replay = _replayed(_settings(receiver_url, _github("body-sha256")))
    assert original["status"] == "accepted"
    assert replay == {"status": "duplicate", "event_id": original["event_id"]}
    assert count_events(db_url) == 1
