"""A verifier module loads when its scheme is first built, not when ``inbox`` is imported.

An app that only embeds the writer (``from inbox import InboxWriter``) should not pay for ten
schemes and ``cryptography``; a receiver with a Stripe source should load Stripe's alone.
"""

from __future__ import annotations

from tests._imports import loaded_after as _loaded_after

SCHEME_MODULES = (
    "inbox._providers._adyen",
    "inbox._providers._alipay",
    "inbox._providers._bitbucket",
    "inbox._providers._calendly",
    "inbox._providers._discord",
    "inbox._providers._hubspot",
    "inbox._providers._twitch",
    "inbox._providers._zoom",
    "inbox._providers._intercom",
    "inbox._providers._linear",
    "inbox._providers._mailgun",
    "inbox._providers._meta",
    "inbox._providers._jira",
    "inbox._providers._docusign",
    "inbox._providers._braintree",
    "inbox._providers._paypal",
    "inbox._providers._mollie",
    "inbox._providers._plaid",
    "inbox._providers._postmark",
    "inbox._providers._sendgrid",
    "inbox._providers._sentry",
    "inbox._providers._square",
    "inbox._providers._typeform",
    "inbox._providers._vercel",
    "inbox._providers._zendesk",
    "inbox._providers._catalog",
    "inbox._providers._clerk",
    "inbox._providers._coinbase_commerce",
    "inbox._providers._gitlab",
    "inbox._providers._lemonsqueezy",
    "inbox._providers._paddle",
    "inbox._providers._razorpay",
    "inbox._providers._resend",
    "inbox._providers._telegram",
    "inbox._providers._token",
    "inbox._providers._github",
    "inbox._providers._hmac_recipe",
    "inbox._providers._keys",
    "inbox._providers._none",
    "inbox._providers._shopify",
    "inbox._providers._slack",
    "inbox._providers._standard_webhooks",
    "inbox._providers._stripe",
    "inbox._providers._twilio",
    "inbox._providers._wechatpay",
)


def loaded_after(code: str) -> set[str]:
    """The scheme modules (and whether cryptography) a fresh interpreter holds after ``code``."""
    return set(_loaded_after(code, [*SCHEME_MODULES, "cryptography"]))


def test_importing_the_writer_loads_no_scheme_and_no_cryptography() -> None:
    assert loaded_after("from inbox import InboxWriter") == set()


def test_importing_the_verifiers_package_loads_no_scheme() -> None:
    assert loaded_after("import inbox._providers") == set()


def test_building_one_scheme_loads_only_that_scheme() -> None:
    code = "from inbox._providers import build_verifier\nbuild_verifier('stripe', secrets=['s'])"
    assert loaded_after(code) == {"inbox._providers._stripe"}


def test_the_lazily_exported_helpers_still_resolve() -> None:
    code = (
        "from inbox._providers import decrypt_wechatpay_resource, twilio_url_with_body_hash\n"
        "assert callable(decrypt_wechatpay_resource) and callable(twilio_url_with_body_hash)"
    )
    assert "inbox._providers._wechatpay" in loaded_after(code)
