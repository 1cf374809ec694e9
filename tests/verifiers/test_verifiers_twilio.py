"""Twilio, against the vectors of twilio/twilio-python tests/unit/test_request_validator.py.

Auth token ``12345``, URL ``https://mycompany.com/myapp.php?foo=1&bar=2``, the five call
parameters, and the expected signatures for: the plain URL, the URL with ``:443`` / ``:80``
added, an ``http`` URL with port 1234, duplicated parameters, and a JSON body carried by
``bodySHA256``.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier, twilio_url_with_body_hash
from tests.verifiers._proofs import proves

TOKEN = "12345"
URL = "https://mycompany.com/myapp.php?foo=1&bar=2"
PARAMS = {
    "CallSid": "CA1234567890ABCDE",
    "Digits": "1234",
    "From": "+14158675309",
    "To": "+18005551212",
    "Caller": "+14158675309",
}
FORM = urlencode(PARAMS).encode()
EXPECTED = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
EXPECTED_WITH_443 = "kvajT1Ptam85bY51eRf/AJRuM3w="
EXPECTED_HTTP_WITH_80 = "0ZXoZLH/DfblKGATFgpif+LLRf4="
EXPECTED_HTTP_WITH_1234 = "Zmvh+3yNM1Phv2jhDCwEM3q5ebU="
DUPLICATES_FORM = b"Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"
EXPECTED_DUPLICATES = "IK+Dwps556ElfBT0I3Rgjkr1wJU="
JSON_BODY = b'{"property": "value", "boolean": true}'
JSON_BODY_HASH = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
EXPECTED_JSON = "a9nBmqA0ju/hNViExpshrM61xv4="

FORM_TYPE = {"content-type": "application/x-www-form-urlencoded"}


def form_request(url: str, signature: str, body: bytes = FORM) -> WebhookRequest:
    return WebhookRequest("POST", url, {**FORM_TYPE, "x-twilio-signature": signature}, body)


def verify(request: WebhookRequest, **options: object) -> None:
    build_verifier("twilio", secrets=[TOKEN], options=options).verify(request, now=0)


def reason(request: WebhookRequest, **options: object) -> str:
    with pytest.raises(VerificationError) as info:
        verify(request, **options)
    return info.value.reason


@proves("twilio", "vectors")
def test_compute_signature_vector() -> None:
    verify(form_request(URL, EXPECTED))


def test_signer_reproduces_the_vector() -> None:
    headers = build_signer("twilio", secrets=[TOKEN]).sign(body=FORM, url=URL, now=0, msg_id="m")
    assert headers["x-twilio-signature"] == EXPECTED


def test_duplicate_parameters_vector() -> None:
    verify(form_request(URL, EXPECTED_DUPLICATES, DUPLICATES_FORM))


def test_port_is_removed_on_https() -> None:
    verify(form_request(URL.replace(".com", ".com:1234"), EXPECTED))


def test_port_is_kept_on_http() -> None:
    url = URL.replace(".com", ".com:1234").replace("https", "http")
    verify(form_request(url, EXPECTED_HTTP_WITH_1234))


def test_default_port_is_added_on_https() -> None:
    verify(form_request(URL, EXPECTED_WITH_443))


def test_default_port_is_added_on_http() -> None:
    verify(form_request(URL.replace("https", "http"), EXPECTED_HTTP_WITH_80))


def test_json_body_vector() -> None:
    url = URL + "&bodySHA256=" + JSON_BODY_HASH
    assert twilio_url_with_body_hash(URL, JSON_BODY) == url
    headers = {"content-type": "application/json", "x-twilio-signature": EXPECTED_JSON}
    verify(WebhookRequest("POST", url, headers, JSON_BODY))


def test_json_body_not_matching_its_hash_fails() -> None:
    url = URL + "&bodySHA256=" + JSON_BODY_HASH
    headers = {"content-type": "application/json", "x-twilio-signature": EXPECTED_JSON}
    request = WebhookRequest("POST", url, headers, JSON_BODY.replace(b"value", b"other"))
    assert reason(request) == "bad_signature"


def test_public_url_replaces_scheme_host_and_path_but_keeps_the_query() -> None:
    """Behind a proxy the app sees http://10.0.0.5:8000/...; Twilio signed the public URL."""
    internal = "http://10.0.0.5:8000/internal/twilio?foo=1&bar=2"
    request = form_request(internal, EXPECTED)
    assert reason(request) == "bad_signature"
    verify(request, public_url="https://mycompany.com/myapp.php")


def test_public_url_does_not_let_a_changed_query_through() -> None:
    request = form_request("http://10.0.0.5:8000/internal/twilio?foo=1&bar=3", EXPECTED)
    assert reason(request, public_url="https://mycompany.com/myapp.php") == "bad_signature"


def test_changed_parameter_fails() -> None:
    body = FORM.replace(b"Digits=1234", b"Digits=9999")
    assert reason(form_request(URL, EXPECTED, body)) == "bad_signature"


def test_parameters_ignored_without_form_content_type() -> None:
    """Without the form content type the body is not parameters, so the signature differs."""
    headers = {"content-type": "text/plain", "x-twilio-signature": EXPECTED}
    assert reason(WebhookRequest("POST", URL, headers, FORM)) == "bad_signature"


def test_non_base64_signature_is_malformed() -> None:
    assert reason(form_request(URL, "not base64!")) == "malformed_header"
