"""An ordered source's deliveries carry their ordering key and timestamp to the log and the
work row; a spec that matches nothing never loses the event (processed unordered)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from inbox import ConfigError, Settings, create_app, load_settings
from tests._ordering import ordering_of
from tests.receiver.conftest import STRIPE_SECRET, signed

ORDERED = {
    "name": "stripe",
    "verifier": "stripe",
    "secrets": [STRIPE_SECRET],
    "ordering_key": "json:/data/object/id",
    "order_by": "json:/created",
}


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(
        database={"url": db_url},
        sources=[ORDERED, {**ORDERED, "name": "loose", "on_dead": "continue", "order_by": None}],
        receiver={"write_timeout_seconds": 2.0},
    )


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        yield client


def _post(client: TestClient, settings: Settings, source: str, payload: dict[str, Any]) -> int:
    request = signed(settings, source, body=json.dumps(payload).encode())
    response = client.post(f"/webhooks/{source}", content=request.body, headers=request.headers)
    assert response.status_code == 200, response.text
    return int(response.json()["event_id"])


def test_the_key_and_the_provider_timestamp_reach_the_log_and_the_work_row(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    created = 1_700_000_000
    event_id = _post(
        client,
        settings,
        "stripe",
        {
            "id": "evt_1",
            "type": "customer.updated",
            "created": created,
            "data": {"object": {"id": "cus_9"}},
        },
    )
    at = datetime.fromtimestamp(created, UTC)
    stored = ordering_of(db_url, event_id)
    assert stored == ("cus_9", at, "hold", "stripe", "cus_9", at, "hold", False)


def test_without_order_by_the_arrival_orders_and_on_dead_is_the_sources(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    event_id = _post(
        client, settings, "loose", {"id": "evt_2", "type": "x", "data": {"object": {"id": "o"}}}
    )
    row = ordering_of(db_url, event_id)
    assert row[0] == "o"
    assert row[2] == "continue"
    assert row[7] is True


def test_a_key_spec_that_matches_nothing_is_processed_unordered_counted_and_logged_once(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    with capture_logs() as logs:
        event_id = _post(client, settings, "stripe", {"id": "evt_3", "type": "ping"})
    assert ordering_of(db_url, event_id) == (None, None, None, None, None, None, None, None)
    unmatched = [e for e in logs if e["event"] == "ordering_key_unmatched"]
    assert len(unmatched) == 1
    assert unmatched[0]["source"] == "stripe"
    assert unmatched[0]["key"] == "evt_3"
    metrics = client.get("/metrics").text
    assert 'inbox_receiver_ordering_unmatched_total{field="ordering_key",source="stripe"} 1.0' in (
        metrics
    )


def test_an_unusable_timestamp_orders_by_arrival_and_is_counted(
    client: TestClient, settings: Settings, db_url: str
) -> None:
    with capture_logs() as logs:
        event_id = _post(
            client,
            settings,
            "stripe",
            {"id": "evt_4", "type": "x", "created": "soon", "data": {"object": {"id": "c"}}},
        )
    row = ordering_of(db_url, event_id)
    assert row[0] == "c"
    assert row[7] is True
    assert [e["event"] for e in logs].count("order_by_unmatched") == 1
    assert 'field="order_by",source="stripe"} 1.0' in client.get("/metrics").text


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"ordering_key": "json:data/id"}, "source 'pay', ordering_key"),
        ({"ordering_key": "body-sha256"}, "source 'pay', ordering_key"),
        ({"ordering_key": "json:/id", "order_by": "cookie:x"}, "source 'pay', order_by"),
        ({"on_dead": "continue"}, "source 'pay', on_dead: applies to ordered sources only"),
        ({"ordering_key": "json:/id", "on_dead": "later"}, "on_dead"),
    ],
)
def test_an_invalid_ordering_setting_names_the_file_the_source_and_the_field(
    tmp_path: Path, extra: dict[str, str], says: str
) -> None:
    lines = [f'{name} = "{value}"' for name, value in extra.items()]
    path = tmp_path / "inbox.toml"
    path.write_text('[[sources]]\nname = "pay"\nverifier = "none"\n' + "\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(path) in str(caught.value)
    assert says in str(caught.value)
