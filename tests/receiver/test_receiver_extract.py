"""Key and type extraction: the providers' defaults, the overrides, and hostile bodies."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from inbox import ConfigError, Settings
from inbox._core.config.schemes import SCHEMES
from inbox._providers import WebhookRequest, provider
from inbox._receiving.extract import Spec, extraction_for, inject, parse_spec
from tests._commands import REPO

JSON = {"content-type": "application/json"}
FORM = {"content-type": "application/x-www-form-urlencoded"}


def request(body: bytes = b"", **headers: str) -> WebhookRequest:
    lowered = {k.replace("_", "-").lower(): v for k, v in headers.items()}
    return WebhookRequest("POST", "https://example.com/hook", lowered, body)


@pytest.mark.parametrize(
    ("verifier", "req", "expected"),
    [
        (
            "standard-webhooks",
            request(b'{"type": "user.created"}', webhook_id="msg_1"),
            ("msg_1", "user.created"),
        ),
        ("stripe", request(b'{"id": "evt_1", "type": "invoice.paid"}'), ("evt_1", "invoice.paid")),
        (
            "github",
            request(b"{}", x_github_delivery="d-1", x_github_event="push"),
            ("d-1", "push"),
        ),
        (
            "shopify",
            request(
                b"{}",
                x_shopify_event_id="e-1",
                x_shopify_webhook_id="w-1",
                x_shopify_topic="orders/create",
            ),
            ("e-1", "orders/create"),
        ),
        ("shopify", request(b"{}", x_shopify_webhook_id="w-1"), ("w-1", None)),
        (
            "slack",
            request(b'{"event_id": "Ev1", "type": "event_callback", "event": {"type": "message"}}'),
            ("Ev1", "message"),
        ),
        ("twilio", request(b"Body=hi", i_twilio_idempotency_token="tok-1"), ("tok-1", None)),
        (
            "alipay",
            request(b"notify_id=n1&notify_type=trade_status_sync", **FORM),
            ("n1", "trade_status_sync"),
        ),
        (
            "wechatpay",
            request(b'{"id": "w-1", "event_type": "TRANSACTION.SUCCESS"}'),
            ("w-1", "TRANSACTION.SUCCESS"),
        ),
    ],
)
def test_provider_defaults(
    verifier: str, req: WebhookRequest, expected: tuple[str | None, str | None]
) -> None:
    assert extraction_for(verifier).extract(req) == expected


@pytest.mark.parametrize("verifier", ["none", "hmac"])
def test_schemes_without_a_convention_key_on_the_body_hash(verifier: str) -> None:
    body = b'{"anything": 1}'
    key, event_type = extraction_for(verifier).extract(request(body))
    assert key == hashlib.sha256(body).hexdigest()
    assert event_type is None


def test_an_hmac_recipe_with_an_id_header_keys_on_it() -> None:
    extraction = extraction_for("hmac", options={"id_header": "X-Delivery"})
    assert extraction.extract(request(b"{}", x_delivery="d-9"))[0] == "d-9"


@pytest.mark.parametrize(
    ("key_from", "req", "key"),
    [
        ("header:X-Request-Id", request(b"{}", x_request_id="r-1"), "r-1"),
        ("json:/data/object/id", request(b'{"data": {"object": {"id": "o-1"}}}'), "o-1"),
        ("json:/items/1", request(b'{"items": ["a", "b"]}'), "b"),
        ("json:/a~1b/c~0d", request(b'{"a/b": {"c~d": "escaped"}}'), "escaped"),
        ("json:/n", request(b'{"n": 12345}'), "12345"),
        ("form:MessageSid", request(b"MessageSid=SM1&Body=x", **FORM), "SM1"),
        ("body-sha256", request(b"abc"), hashlib.sha256(b"abc").hexdigest()),
    ],
)
def test_overrides(key_from: str, req: WebhookRequest, key: str) -> None:
    assert extraction_for("stripe", key_from=key_from).extract(req)[0] == key


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"id": null}',
        b'{"id": ""}',
        b'{"id": "   "}',
        b'{"id": true}',
        b'{"id": 1.5}',
        b'{"id": {"nested": 1}}',
        b"\xff\xfe\x00garbage",
        b"[" * 100_000,  # deep nesting: a RecursionError inside json, caught
        b'{"id": ' + b"9" * 5000 + b"}",  # an integer too long to convert
    ],
)
def test_no_key_in_a_hostile_or_odd_body_is_none_never_an_exception(body: bytes) -> None:
    assert extraction_for("stripe").extract(request(body)) == (None, None)


@pytest.mark.parametrize(
    ("verifier", "req", "sought"),
    [
        ("stripe", request(b"not json"), "json:/id; the body is not JSON"),
        ("stripe", request(b"\xff\xfe"), "json:/id; the body is not JSON"),
        ("stripe", request(b'{"object": "event"}'), "json:/id"),  # JSON, without the field
        # The key's places are headers: the body (read for the type) is not what is missing.
        ("standard-webhooks", request(b"not json"), "header:webhook-id, header:svix-id"),
    ],
)
def test_a_missing_key_says_where_it_was_sought_and_when_the_body_is_not_json(
    verifier: str, req: WebhookRequest, sought: str
) -> None:
    found = extraction_for(verifier).read(req)
    assert (found.key, found.key_sought) == (None, sought)


def test_a_found_key_reports_nothing_sought() -> None:
    assert extraction_for("stripe").read(request(b'{"id": "evt_1"}')).key_sought == ""


def test_array_indexes_are_strict() -> None:
    extraction = extraction_for("stripe", key_from="json:/items/01")
    assert extraction.extract(request(b'{"items": ["a", "b"]}'))[0] is None
    extraction = extraction_for("stripe", key_from="json:/items/5")
    assert extraction.extract(request(b'{"items": ["a"]}'))[0] is None


def test_a_form_in_an_undeclared_charset_still_yields_ascii_fields() -> None:
    body = b"notify_id=n-7&subject=%D6%D0%CE%C4&charset=gbk"  # GBK escapes, no charset header
    assert extraction_for("alipay").extract(request(body, **FORM))[0] == "n-7"


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("header:X-Id", Spec("header", "x-id")),
        ("json:/id", Spec("json", "/id")),
        ("json:", Spec("json", "")),
        ("form:notify_id", Spec("form", "notify_id")),
        ("body-sha256", Spec("body-sha256")),
    ],
)
def test_parse_spec(text: str, spec: Spec) -> None:
    assert parse_spec(text) == spec
    assert parse_spec(str(spec)) == spec


@pytest.mark.parametrize("text", ["id", "header:", "json:id", "form:", "xml:/a", "body-md5"])
def test_bad_specs_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"key/type source|required|starts with"):
        parse_spec(text)


def test_a_bad_key_from_fails_when_settings_load() -> None:
    with pytest.raises(ValueError, match="key_from"):
        Settings(sources=[{"name": "s", "verifier": "none", "key_from": "id"}])


def test_a_bad_source_fails_when_the_receiver_is_built() -> None:
    from inbox import Receiver

    settings = Settings(sources=[{"name": "s", "verifier": "stripe"}])  # no secret
    with pytest.raises(ConfigError, match=r"source 's'.*secret"):
        Receiver(settings)


def test_inject_puts_values_where_extraction_reads_them() -> None:
    payload: dict[str, Any] = {"data": "kept"}
    headers: dict[str, str] = {}
    for spec_text, value in [
        ("header:X-Id", "h"),
        ("json:/meta/id", "j"),
        ("form:field", "f"),
        ("body-sha256", "ignored"),
    ]:
        inject(parse_spec(spec_text), value, payload=payload, headers=headers)
    assert headers == {"x-id": "h"}
    assert payload == {"data": "kept", "meta": {"id": "j"}, "field": "f"}
    body = json.dumps(payload).encode()
    assert extraction_for("none", key_from="json:/meta/id").extract(request(body))[0] == "j"


def test_inject_walks_the_items_of_lists_the_reader_walks() -> None:
    """HubSpot posts an array: its key is ``json:/0/eventId``, written into the sample's
    first item as the reader finds it there."""
    payload: list[Any] = [{"eventId": 1, "attemptNumber": 0}, {"eventId": 2}]
    headers: dict[str, str] = {}
    inject(parse_spec("json:/0/eventId"), "k-1", payload=payload, headers=headers)
    inject(parse_spec("json:/1/tags/0"), "t", payload=payload, headers=headers)  # made
    nested: dict[str, Any] = {"items": [{"n": 1}, ["a", "b"]]}
    inject(parse_spec("json:/items/1/1"), "B", payload=nested, headers=headers)
    inject(parse_spec("json:/items/0/id"), "i", payload=nested, headers=headers)
    assert payload == [{"eventId": "k-1", "attemptNumber": 0}, {"eventId": 2, "tags": {"0": "t"}}]
    assert nested == {"items": [{"n": 1, "id": "i"}, ["a", "B"]]}
    body = json.dumps(payload).encode()
    found = extraction_for("none", key_from="json:/0/eventId").extract(request(body))
    assert found[0] == "k-1"
    for missing in ("json:/2/eventId", "json:/01/eventId", "json:/x/eventId"):
        with pytest.raises(ValueError, match="no item"):
            inject(parse_spec(missing), "v", payload=payload, headers=headers)


def test_the_operations_doc_names_each_schemes_places() -> None:
    doc = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Where an event's key and type come from") :]
    section = section[: section.index("\n## ")]
    rows = {
        cells[0].strip("`"): (cells[1], cells[2])
        for line in section.splitlines()
        if line.startswith("| `") and len(cells := [c.strip() for c in line[1:-1].split("|")]) == 3
    }
    assert sorted(rows) == sorted(SCHEMES)

    def places(specs: tuple[Spec, ...]) -> str:
        return ", ".join(f"`{spec}`" for spec in specs) or "none"

    for scheme, (key, event_type) in rows.items():
        record = provider(scheme)
        assert event_type == places(record.type_specs), scheme
        if record.option_key_specs is None:
            assert key == places(record.key_specs), scheme
        else:  # an option's header comes first (the hmac recipe's id_header)
            assert key.endswith(f", else {places(record.key_specs)}"), scheme
