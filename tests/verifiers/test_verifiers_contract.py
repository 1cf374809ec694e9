"""Every scheme, through the public factories: round trips and the negative cases they share.

Each case signs a request with ``build_signer`` + ``sign_request`` and checks it with
``build_verifier``; then breaks it the ways an attacker or a careless proxy would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

import inbox._providers
from inbox._core.config.schemes import PROVIDER_MODULES
from inbox._core.errors import VerificationError
from inbox._providers import (
    SCHEMES,
    WebhookRequest,
    build_signer,
    build_verifier,
    provider,
    sign_request,
    twilio_url_with_body_hash,
)

NOW = 1_700_000_000.0
URL = "https://hooks.example.com/webhooks/src?tenant=acme"
JSON_BODY = b'{"id": "evt_1", "type": "invoice.paid", "data": {"amount": 100}}'
# A Braintree form: its bt_payload (base64 of XML) is what is signed; it holds a "10".
BRAINTREE_BODY = (
    b"bt_payload=PG5vdGlmaWNhdGlvbj48a2luZD5jaGVjazwva2luZD48aWQ%2BeH10PC9pZD48L25vdGlmaWNhdGlv"
    b"%0Abj4%3D%0A"
)
FORM_BODY = b"notify_id=n1&trade_status=TRADE_SUCCESS&total_amount=10.00&subject=%E6%B5%8B%E8%AF%95"
HMAC_OPTIONS = {
    "header": "X-Signature",
    "prefix": "sha256=",
    "signed_content": "{id}.{timestamp}.{body}",
    "timestamp_header": "X-Timestamp",
    "id_header": "X-Id",
}


# The schemes that sign a timestamp; the headers that two of them cannot do without.
TIMESTAMPED = (
    "standard-webhooks",
    "stripe",
    "slack",
    "wechatpay",
    "hmac",
    "paddle",
    "resend",
    "clerk",
    "calendly",
    "zendesk",
    "sendgrid",
    "plaid",
    "discord",
    "zoom",
    "twitch",
    "hubspot",
    "paypal",
)
STANDARD_HEADERS = "webhook-id webhook-timestamp webhook-signature"
SVIX_HEADERS = "svix-id svix-timestamp svix-signature"
WECHATPAY_HEADERS = "wechatpay-timestamp wechatpay-nonce wechatpay-signature wechatpay-serial"
ZENDESK_HEADERS = "x-zendesk-webhook-signature x-zendesk-webhook-signature-timestamp"
SENDGRID_HEADERS = "x-twilio-email-event-webhook-signature x-twilio-email-event-webhook-timestamp"
PAYPAL_HEADERS = " ".join(
    f"paypal-{name}"
    for name in (
        "transmission-id",
        "transmission-time",
        "transmission-sig",
        "cert-url",
        "auth-algo",
    )
)
PAYPAL_OPTIONS = {"webhook_id": "WH-ID-1"}
TWITCH_HEADERS = " ".join(
    f"twitch-eventsub-message-{name}" for name in ("id", "timestamp", "signature")
)


@dataclass
class Case:
    """One scheme's configuration: how to sign, how to verify, and what a wrong key is."""

    scheme: str
    verify_kwargs: dict[str, Any]
    sign_kwargs: dict[str, Any]
    wrong_sign_kwargs: dict[str, Any]
    required_headers: tuple[str, ...]
    body: bytes = JSON_BODY
    url: str = URL

    @property
    def timestamped(self) -> bool:
        return self.scheme in TIMESTAMPED


def _secret(
    scheme: str, secret: str, wrong: str, headers: str, options: Any = None, **fields: Any
) -> Case:
    """A shared-secret scheme: ``secret`` signs and verifies, ``wrong`` is another one; the
    ``options`` (the hmac recipe's) go to both sides. ``headers`` are space-separated."""
    extra = {"options": options} if options else {}
    config = {"secrets": [secret], **extra}
    wrong_config = {"secrets": [wrong], **extra}
    return Case(scheme, config, config, wrong_config, tuple(headers.split()), **fields)


def _key_pair(
    scheme: str, public_keys: Any, private: str, wrong: str, headers: str, **fields: Any
) -> Case:
    """A key-pair scheme: ``public_keys`` verify what ``private`` signs; ``wrong`` is another
    private key; the ``options`` (WeChat Pay's serial) go to the signer."""
    extra = {"options": fields.pop("options")} if "options" in fields else {}
    sign, wrong_sign = {"private_key": private, **extra}, {"private_key": wrong, **extra}
    verify = {"public_keys": public_keys}
    return Case(scheme, verify, sign, wrong_sign, tuple(headers.split()), **fields)


def _cases(
    rsa_pair: Any, other_rsa_pair: Any, ed25519_pair: Any, ec_pair: Any, other_ec_pair: Any
) -> list[Case]:
    whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    other_whsec = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="
    private, wrong = rsa_pair.private_pem, other_rsa_pair.private_pem
    serials, serial = {"SERIAL1": rsa_pair.public_pem}, {"serial": "SERIAL1"}
    ed = ed25519_pair
    twilio_json_url = twilio_url_with_body_hash(URL, JSON_BODY)
    return [
        _secret("standard-webhooks", whsec, other_whsec, STANDARD_HEADERS),
        _secret("stripe", "whsec_stripe_current", "whsec_stripe_other", "stripe-signature"),
        _secret("github", "gh-secret", "gh-other", "x-hub-signature-256"),
        _secret("meta", "meta-secret", "meta-other", "x-hub-signature-256"),
        _secret("jira", "jira-secret", "jira-other", "x-hub-signature"),
        _secret("docusign", "ds-key", "ds-other", "x-docusign-signature-1"),
        _secret("braintree", "bt-private", "bt-other", "", body=BRAINTREE_BODY),
        Case(
            "paypal",
            {"public_keys": {"CERT-1": rsa_pair.certificate_pem}, "options": PAYPAL_OPTIONS},
            {"private_key": private, "options": {**PAYPAL_OPTIONS, "cert_id": "CERT-1"}},
            {"private_key": wrong, "options": {**PAYPAL_OPTIONS, "cert_id": "CERT-1"}},
            tuple(PAYPAL_HEADERS.split()),
        ),
        _secret("shopify", "shp-secret", "shp-other", "x-shopify-hmac-sha256"),
        _secret(
            "slack", "slack-secret", "slack-other", "x-slack-signature x-slack-request-timestamp"
        ),
        _secret(
            "twilio", "twilio-token", "twilio-other", "x-twilio-signature", url=twilio_json_url
        ),
        _secret("twilio", "twilio-token", "twilio-other", "x-twilio-signature", body=FORM_BODY),
        _key_pair("alipay", [rsa_pair.public_pem], private, wrong, "", body=FORM_BODY),
        _key_pair("wechatpay", serials, private, wrong, WECHATPAY_HEADERS, options=serial),
        _key_pair("standard-webhooks", [ed.whpk], ed.whsk, _other_whsk(), STANDARD_HEADERS),
        _secret("hmac", "hmac-secret", "hmac-other", "x-signature x-timestamp x-id", HMAC_OPTIONS),
        _secret("resend", whsec, other_whsec, SVIX_HEADERS),
        _secret("clerk", whsec, other_whsec, SVIX_HEADERS),
        _secret("paddle", "pdl_ntfset_a", "pdl_ntfset_b", "paddle-signature"),
        _secret("razorpay", "rzp-secret", "rzp-other", "x-razorpay-signature"),
        _secret("lemonsqueezy", "ls-secret", "ls-other", "x-signature"),
        _secret("coinbase-commerce", "cc-secret", "cc-other", "x-cc-webhook-signature"),
        _secret("intercom", "ic-secret", "ic-other", "x-hub-signature"),
        _secret("typeform", "tf-secret", "tf-other", "typeform-signature"),
        _secret("vercel", "vc-secret", "vc-other", "x-vercel-signature"),
        _secret("bitbucket", "bb-secret", "bb-other", "x-hub-signature"),
        _secret("sentry", "sn-secret", "sn-other", "sentry-hook-signature"),
        _secret("calendly", "cal-secret", "cal-other", "calendly-webhook-signature"),
        _secret("square", "sq-secret", "sq-other", "x-square-hmacsha256-signature"),
        _secret("zendesk", "zd-secret", "zd-other", ZENDESK_HEADERS),
        _secret("mollie", "ml-secret", "ml-other", "x-mollie-signature"),
        _key_pair(
            "sendgrid",
            [ec_pair.public_b64],
            ec_pair.private_pem,
            other_ec_pair.private_pem,
            SENDGRID_HEADERS,
        ),
        _key_pair(
            "plaid",
            {"KID1": ec_pair.jwk},
            ec_pair.private_pem,
            other_ec_pair.private_pem,
            "plaid-verification",
            options={"key_id": "KID1"},
        ),
        _key_pair(
            "discord",
            [ed.discord_public],
            ed.discord_private,
            _other_discord_private(),
            "x-signature-ed25519 x-signature-timestamp",
        ),
        _secret("zoom", "zm-secret", "zm-other", "x-zm-signature x-zm-request-timestamp"),
        _secret("twitch", "tw-secret", "tw-other", TWITCH_HEADERS),
        _secret(
            "hubspot",
            "hs-secret",
            "hs-other",
            "x-hubspot-signature-v3 x-hubspot-request-timestamp",
        ),
    ]


def _other_discord_private() -> str:
    # A fixed, valid Ed25519 seed (hex) that is not the fixture's key.
    return "11" * 32


def _other_whsk() -> str:
    # A fixed, valid Ed25519 seed that is not the fixture's key.
    return "whsk_" + "A" * 43


@pytest.fixture
def cases(
    rsa_pair: Any, other_rsa_pair: Any, ed25519_pair: Any, ec_pair: Any, other_ec_pair: Any
) -> list[Case]:
    return _cases(rsa_pair, other_rsa_pair, ed25519_pair, ec_pair, other_ec_pair)


CASE_IDS = [
    "standard-webhooks",
    "stripe",
    "github",
    "meta",
    "jira",
    "docusign",
    "braintree",
    "paypal",
    "shopify",
    "slack",
    "twilio-json",
    "twilio-form",
    "alipay",
    "wechatpay",
    "standard-webhooks-ed25519",
    "hmac",
    "resend",
    "clerk",
    "paddle",
    "razorpay",
    "lemonsqueezy",
    "coinbase-commerce",
    "intercom",
    "typeform",
    "vercel",
    "bitbucket",
    "sentry",
    "calendly",
    "square",
    "zendesk",
    "mollie",
    "sendgrid",
    "plaid",
    "discord",
    "zoom",
    "twitch",
    "hubspot",
]


TIMESTAMPED_IDS = [i for i in CASE_IDS if i.startswith(TIMESTAMPED)]
JSON_IDS = [i for i in CASE_IDS if i not in ("twilio-form", "alipay", "braintree")]


@pytest.fixture(params=CASE_IDS)
def case(request: pytest.FixtureRequest, cases: list[Case]) -> Case:
    return cases[CASE_IDS.index(request.param)]


@pytest.fixture(params=TIMESTAMPED_IDS)
def timestamped_case(request: pytest.FixtureRequest, cases: list[Case]) -> Case:
    """The schemes that sign a timestamp."""
    found = cases[CASE_IDS.index(request.param)]
    assert found.timestamped
    return found


@pytest.fixture(params=JSON_IDS)
def json_case(request: pytest.FixtureRequest, cases: list[Case]) -> Case:
    """The cases whose body is JSON."""
    found = cases[CASE_IDS.index(request.param)]
    assert found.body is JSON_BODY
    return found


def signed(
    case: Case, *, now: float = NOW, body: bytes | None = None, **sign_kwargs: Any
) -> WebhookRequest:
    """A request signed for ``case`` (``sign_kwargs`` replace the case's signer config)."""
    signer = build_signer(case.scheme, **(sign_kwargs or case.sign_kwargs))
    sent_body, headers = sign_request(
        signer, body=case.body if body is None else body, url=case.url, now=now, msg_id="msg_1"
    )
    return WebhookRequest("POST", case.url, {k.lower(): v for k, v in headers.items()}, sent_body)


def verifier_for(case: Case, **overrides: Any) -> Callable[[WebhookRequest], None]:
    verifier = build_verifier(case.scheme, **{**case.verify_kwargs, **overrides})

    def verify(request: WebhookRequest) -> None:
        verifier.verify(request, now=NOW)

    return verify


def test_round_trip(case: Case) -> None:
    verifier_for(case)(signed(case))


def test_verifier_reports_its_scheme_name(case: Case) -> None:
    assert build_verifier(case.scheme, **case.verify_kwargs).name == case.scheme


def test_tampered_body_fails(case: Case) -> None:
    request = signed(case)
    tampered = request.body.replace(b"10", b"99")
    assert tampered != request.body
    with pytest.raises(VerificationError) as info:
        verifier_for(case)(replace(request, body=tampered))
    assert info.value.reason == "bad_signature"


def test_appended_content_fails(case: Case) -> None:
    """Trailing bytes (JSON) or an extra parameter (forms, whose order does not matter)."""
    request = signed(case)
    suffix = b" " if case.body is JSON_BODY else b"&refund=1"
    with pytest.raises(VerificationError):
        verifier_for(case)(replace(request, body=request.body + suffix))


def test_wrong_key_fails(case: Case) -> None:
    with pytest.raises(VerificationError) as info:
        verifier_for(case)(signed(case, **case.wrong_sign_kwargs))
    assert info.value.reason == "bad_signature"


def test_reformatted_json_fails(json_case: Case) -> None:
    """The same JSON with other whitespace is other bytes: the signature covers bytes."""
    case = json_case
    request = signed(case)
    reformatted = json.dumps(json.loads(request.body), separators=(",", ":")).encode()
    assert json.loads(reformatted) == json.loads(request.body)
    with pytest.raises(VerificationError):
        verifier_for(case)(replace(request, body=reformatted))


def test_each_missing_header_fails(case: Case) -> None:
    request = signed(case)
    for name in case.required_headers:
        headers = {k: v for k, v in request.headers.items() if k != name}
        with pytest.raises(VerificationError) as info:
            verifier_for(case)(replace(request, headers=headers))
        assert info.value.reason == "missing_header", name


def test_no_signature_at_all_fails(case: Case) -> None:
    """A request sent with no signing at all (an attacker's plain POST)."""
    request = WebhookRequest("POST", case.url, {"content-type": "application/json"}, case.body)
    with pytest.raises(VerificationError):
        verifier_for(case)(request)


def test_rotation_second_secret_or_key_matches(
    case: Case, other_rsa_pair: Any, other_ec_pair: Any
) -> None:
    """Verifier configured with [retired, current]: a request signed with current passes."""
    kwargs = dict(case.verify_kwargs)
    if "secrets" in kwargs:
        kwargs["secrets"] = ["whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", *kwargs["secrets"]]
    elif case.scheme == "wechatpay":
        kwargs["public_keys"] = {"OLD": other_rsa_pair.public_pem, **kwargs["public_keys"]}
    elif case.scheme == "alipay":
        kwargs["public_keys"] = [other_rsa_pair.public_pem, *kwargs["public_keys"]]
    elif case.scheme == "sendgrid":
        kwargs["public_keys"] = [other_ec_pair.public_b64, *kwargs["public_keys"]]
    elif case.scheme == "plaid":
        kwargs["public_keys"] = {"OLD": other_ec_pair.public_pem, **kwargs["public_keys"]}
    elif case.scheme == "paypal":
        kwargs["public_keys"] = {"OLD": other_rsa_pair.certificate_pem, **kwargs["public_keys"]}
    elif case.scheme == "discord":
        # the public key of _other_discord_private(): a retired application
        retired = "d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737"
        kwargs["public_keys"] = [retired, *kwargs["public_keys"]]
    else:
        kwargs["public_keys"] = [
            "whpk_" + "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
            *kwargs["public_keys"],
        ]
    verifier = build_verifier(case.scheme, **kwargs)
    verifier.verify(signed(case), now=NOW)


def default_window(case: Case) -> int:
    """The window a source gets unless it sets one: its record's (the provider's documented
    window, else the default)."""
    window = provider(case.scheme).about.default_window
    assert window is not None, f"{case.scheme} signs a time: its record needs a window_source"
    return window


def test_stale_timestamp_fails(timestamped_case: Case) -> None:
    case = timestamped_case
    window = default_window(case)
    with pytest.raises(VerificationError) as info:
        verifier_for(case)(signed(case, now=NOW - window - 1))
    assert info.value.reason == "timestamp_too_old"


def test_future_timestamp_fails(timestamped_case: Case) -> None:
    case = timestamped_case
    window = default_window(case)
    with pytest.raises(VerificationError) as info:
        verifier_for(case)(signed(case, now=NOW + window + 1))
    assert info.value.reason == "timestamp_in_future"


def test_timestamp_at_the_tolerance_edge_passes(timestamped_case: Case) -> None:
    case = timestamped_case
    window = default_window(case)
    verifier_for(case)(signed(case, now=NOW - window))
    verifier_for(case)(signed(case, now=NOW + window))


def test_tolerance_is_configurable(timestamped_case: Case) -> None:
    case = timestamped_case
    window = default_window(case)
    with pytest.raises(VerificationError):
        verifier_for(case, tolerance_seconds=2)(signed(case, now=NOW - 3))
    verifier_for(case, tolerance_seconds=window + 60)(signed(case, now=NOW - window - 30))


def test_a_window_is_recorded_exactly_for_the_schemes_that_sign_a_time() -> None:
    # Linear's time is in its body and Mailgun's in its signed token: no contract case.
    timed = {*TIMESTAMPED, "linear", "mailgun"}
    for scheme in SCHEMES:
        about = provider(scheme).about
        assert (about.default_window is not None) == (scheme in timed), scheme
        if about.tolerance_seconds is None and scheme in timed:
            assert about.window_source.startswith("none documented"), scheme


# --- the factories -----------------------------------------------------------------------


def test_exported_names_are_sorted_and_complete() -> None:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    def kind(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert inbox._providers.__all__ == sorted(inbox._providers.__all__, key=kind)
    assert set(inbox._providers.__all__) == {
        "SCHEMES",
        "BodySigner",
        "HandshakeReply",
        "Provider",
        "Sample",
        "provider",
        "Signer",
        "Verifier",
        "WebhookRequest",
        "build_signer",
        "build_verifier",
        "decrypt_wechatpay_resource",
        "sign_request",
        "twilio_url_with_body_hash",
    }
    for name in inbox._providers.__all__:
        assert hasattr(inbox._providers, name)


def test_schemes_are_the_documented_ones() -> None:
    assert set(SCHEMES) == {
        "standard-webhooks",
        "stripe",
        "github",
        "shopify",
        "slack",
        "twilio",
        "alipay",
        "wechatpay",
        "hmac",
        "none",
        "resend",
        "clerk",
        "paddle",
        "razorpay",
        "lemonsqueezy",
        "coinbase-commerce",
        "gitlab",
        "telegram",
        "intercom",
        "typeform",
        "vercel",
        "bitbucket",
        "sentry",
        "calendly",
        "linear",
        "square",
        "zendesk",
        "sendgrid",
        "mailgun",
        "postmark",
        "plaid",
        "adyen",
        "mollie",
        "discord",
        "zoom",
        "twitch",
        "hubspot",
        "meta",
        "jira",
        "docusign",
        "braintree",
        "paypal",
    }


def test_unknown_scheme_is_a_clear_value_error() -> None:
    with pytest.raises(ValueError, match=r"unknown verifier 'stripey'.*stripe"):
        build_verifier("stripey", secrets=["x"])
    with pytest.raises(ValueError, match="unknown verifier"):
        build_signer("stripey", secrets=["x"])


@pytest.mark.parametrize(
    "scheme",
    [
        s
        for s in SCHEMES
        if s not in ("alipay", "wechatpay", "sendgrid", "plaid", "discord", "paypal", "none")
    ],
)
def test_missing_secret_is_a_value_error(scheme: str) -> None:
    options = HMAC_OPTIONS if scheme == "hmac" else {}
    with pytest.raises(ValueError, match=scheme):
        build_verifier(scheme, options=options)
    with pytest.raises(ValueError, match=scheme):
        build_signer(scheme, options=options)


@pytest.mark.parametrize(
    "scheme", ["alipay", "wechatpay", "sendgrid", "plaid", "discord", "paypal"]
)
def test_missing_key_is_a_value_error(scheme: str) -> None:
    with pytest.raises(ValueError, match=scheme):
        build_verifier(scheme, secrets=["not-a-key"])
    with pytest.raises(ValueError, match=scheme):
        build_signer(scheme, options={"serial": "S"} if scheme == "wechatpay" else {})


def test_unloadable_pem_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="public key"):
        build_verifier(
            "alipay", public_keys=["-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----"]
        )


def test_wechatpay_keys_must_be_keyed_by_serial(rsa_pair: Any) -> None:
    with pytest.raises(ValueError, match="Wechatpay-Serial"):
        build_verifier("wechatpay", public_keys=[rsa_pair.public_pem])


def test_a_single_string_secret_is_refused() -> None:
    """``secrets="abc"`` would otherwise be three one-letter secrets."""
    with pytest.raises(ValueError, match="list"):
        build_verifier("github", secrets="abc")


def test_unknown_option_is_refused() -> None:
    with pytest.raises(ValueError, match="public_ur"):
        build_verifier("twilio", secrets=["t"], options={"public_ur": "https://x"})


def test_negative_tolerance_is_refused() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        build_verifier("stripe", secrets=["s"], tolerance_seconds=-1)


def test_none_accepts_anything() -> None:
    verifier = build_verifier("none")
    assert verifier.name == "none"
    verifier.verify(WebhookRequest("POST", URL, {}, b"anything"), now=NOW)
    assert build_signer("none").sign(body=b"", url=URL, now=NOW, msg_id="m") == {}


def test_each_scheme_is_one_module_ending_with_its_record() -> None:
    """Adding a provider is its module and one line of inbox._core.config.schemes: the record is
    what receiving, ``inbox send`` and the factories ask."""
    for name in inbox._providers.SCHEMES:
        record = inbox._providers.provider(name)
        assert isinstance(record, inbox._providers.Provider)
        assert record.name == name
        assert record.verifier.__module__ == record.signer.__module__
        assert record.verifier.__module__ == PROVIDER_MODULES[name]
    with pytest.raises(ValueError, match=r"unknown verifier 'stripey'"):
        inbox._providers.provider("stripey")
