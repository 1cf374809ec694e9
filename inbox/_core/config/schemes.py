"""The registry of providers: a scheme's name -> the module of the providers room that is its
one record (``PROVIDER`` in ``inbox._providers._<name>``).

It lives in the core room, as names only, so settings can check a source's ``verifier`` when
they load without importing any provider (a scheme's module, and ``cryptography`` for the
asymmetric ones, loads when a source first uses it). Adding a provider: write its module
(see ``inbox._providers._provider.Provider``) and add its line here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["PROVIDER_MODULES", "SCHEMES"]

PROVIDER_MODULES: Mapping[str, str] = MappingProxyType(
    {
        "adyen": "inbox._providers._adyen",
        "alipay": "inbox._providers._alipay",
        "bitbucket": "inbox._providers._bitbucket",
        "braintree": "inbox._providers._braintree",
        "calendly": "inbox._providers._calendly",
        "clerk": "inbox._providers._clerk",
        "coinbase-commerce": "inbox._providers._coinbase_commerce",
        "discord": "inbox._providers._discord",
        "docusign": "inbox._providers._docusign",
        "github": "inbox._providers._github",
        "gitlab": "inbox._providers._gitlab",
        "hmac": "inbox._providers._hmac_recipe",
        "hubspot": "inbox._providers._hubspot",
        "intercom": "inbox._providers._intercom",
        "jira": "inbox._providers._jira",
        "lemonsqueezy": "inbox._providers._lemonsqueezy",
        "linear": "inbox._providers._linear",
        "mailgun": "inbox._providers._mailgun",
        "meta": "inbox._providers._meta",
        "mollie": "inbox._providers._mollie",
        "none": "inbox._providers._none",
        "paddle": "inbox._providers._paddle",
        "paypal": "inbox._providers._paypal",
        "plaid": "inbox._providers._plaid",
        "postmark": "inbox._providers._postmark",
        "razorpay": "inbox._providers._razorpay",
        "resend": "inbox._providers._resend",
        "sendgrid": "inbox._providers._sendgrid",
        "sentry": "inbox._providers._sentry",
        "shopify": "inbox._providers._shopify",
        "slack": "inbox._providers._slack",
        "square": "inbox._providers._square",
        "standard-webhooks": "inbox._providers._standard_webhooks",
        "stripe": "inbox._providers._stripe",
        "telegram": "inbox._providers._telegram",
        "twilio": "inbox._providers._twilio",
        "twitch": "inbox._providers._twitch",
        "typeform": "inbox._providers._typeform",
        "vercel": "inbox._providers._vercel",
        "wechatpay": "inbox._providers._wechatpay",
        "zendesk": "inbox._providers._zendesk",
        "zoom": "inbox._providers._zoom",
    }
)

SCHEMES: tuple[str, ...] = tuple(sorted(PROVIDER_MODULES))
"""Every scheme name a source's ``verifier`` may take."""
