"""Twilio's HMAC-SHA256 signing (Webhook Settings with a SharedKey), signed by the twilio SDK.

When a Webhooks Rule matches the URL, Twilio signs with the Setting's SharedKey secret and
algorithm instead of the Auth Token and HMAC-SHA1, and says so in
``X-Twilio-Webhooks-Signature-Settings: key=<id>,algorithm=HMAC_SHA256``; the signed string is
unchanged (twilio-node examples/WebhookSignatureValidation.md; Twilio's "Sign webhooks with
shared keys" page). The signatures here come from the ``twilio`` package's RequestValidator.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode

import pytest
from twilio.request_validator import (
    HMAC_SHA1,
    HMAC_SHA256,
    RequestValidator,
    get_signature_algorithm,
)

from inbox._core.errors import VerificationError
from inbox._providers import WebhookRequest, build_signer, build_verifier, twilio_url_with_body_hash
from tests.verifiers._proofs import proves

AUTH_TOKEN = "12345"
SHARED_KEY = "sk-secret-from-twilio-sharedkeys"
URL = "https://mycompany.com/myapp.php?foo=1&bar=2"
PARAMS = {"CallSid": "CA1234567890ABCDE", "Digits": "1234", "From": "+14158675309"}
FORM = urlencode(PARAMS).encode()
SETTINGS = "key=webhooks_sharedkey_01jz0example,algorithm=HMAC_SHA256"
JSON_BODY = b'{"property": "value", "boolean": true}'


def sdk_signature(secret: str, url: str, params: dict[str, str], algorithm: str) -> str:
    return RequestValidator(secret).compute_signature(url, params, algorithm)


def request(
    url: str, signature: str, body: bytes = FORM, *, settings: str | None = SETTINGS
) -> WebhookRequest:
    headers = {"content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature}
    if settings is not None:
        headers["x-twilio-webhooks-signature-settings"] = settings
    return WebhookRequest("POST", url, headers, body)


def verify(req: WebhookRequest) -> None:
    build_verifier("twilio", secrets=[AUTH_TOKEN, SHARED_KEY]).verify(req, now=0)


def reason(req: WebhookRequest) -> str:
    with pytest.raises(VerificationError) as info:
        verify(req)
    return info.value.reason


@proves("twilio", "sdk-signs")
def test_a_form_signed_with_hmac_sha256_verifies() -> None:
    verify(request(URL, sdk_signature(SHARED_KEY, URL, PARAMS, HMAC_SHA256)))


def test_a_json_body_signed_with_hmac_sha256_verifies() -> None:
    url = twilio_url_with_body_hash(URL, JSON_BODY)
    signature = sdk_signature(SHARED_KEY, url, {}, HMAC_SHA256)
    req = request(url, signature, JSON_BODY)
    verify(
        WebhookRequest("POST", url, {**req.headers, "content-type": "application/json"}, JSON_BODY)
    )


def test_the_algorithm_name_is_case_insensitive_as_in_the_sdk() -> None:
    signature = sdk_signature(SHARED_KEY, URL, PARAMS, HMAC_SHA256)
    verify(request(URL, signature, settings="key=k1, algorithm=hmac_sha256"))


def test_a_sha256_signature_without_the_settings_header_fails() -> None:
    signature = sdk_signature(SHARED_KEY, URL, PARAMS, HMAC_SHA256)
    assert reason(request(URL, signature, settings=None)) == "bad_signature"


def test_a_sha1_signature_claimed_as_sha256_fails() -> None:
    signature = sdk_signature(AUTH_TOKEN, URL, PARAMS, HMAC_SHA1)
    assert reason(request(URL, signature)) == "bad_signature"


def test_a_changed_parameter_fails() -> None:
    signature = sdk_signature(SHARED_KEY, URL, PARAMS, HMAC_SHA256)
    body = FORM.replace(b"Digits=1234", b"Digits=9999")
    assert reason(request(URL, signature, body)) == "bad_signature"


def test_an_unknown_algorithm_is_unsupported() -> None:
    signature = sdk_signature(SHARED_KEY, URL, PARAMS, HMAC_SHA256)
    settings = "key=k1,algorithm=HMAC_SHA512"
    assert reason(request(URL, signature, settings=settings)) == "no_supported_signature"


def test_settings_without_an_algorithm_mean_hmac_sha1_as_in_the_sdk() -> None:
    assert get_signature_algorithm("key=k1") == HMAC_SHA1
    signature = sdk_signature(AUTH_TOKEN, URL, PARAMS, HMAC_SHA1)
    verify(request(URL, signature, settings="key=k1"))


def test_the_classic_auth_token_signature_still_verifies() -> None:
    verify(request(URL, sdk_signature(AUTH_TOKEN, URL, PARAMS, HMAC_SHA1), settings=None))


@proves("twilio", "sdk-verifies")
def test_our_signer_with_a_shared_key_id_verifies_in_the_sdk() -> None:
    signer = build_signer("twilio", secrets=[SHARED_KEY], options={"shared_key_id": "k1"})
    headers = signer.sign(body=FORM, url=URL, now=0, msg_id="m")
    settings = headers["x-twilio-webhooks-signature-settings"]
    assert get_signature_algorithm(settings) == HMAC_SHA256
    params = {name: values[0] for name, values in parse_qs(FORM.decode()).items()}
    validator = RequestValidator(SHARED_KEY)
    assert validator.validate(URL, params, headers["x-twilio-signature"], HMAC_SHA256)
    verify(request(URL, headers["x-twilio-signature"], settings=settings))
