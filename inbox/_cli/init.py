"""``inbox init [DIR] [--provider stripe,github]``: a project to start from — a commented
``inbox.toml``, handlers safe under retries and replays, a place for the project's own
tables, and a test that passes as written. It never overwrites a file unless ``--force``."""

from __future__ import annotations

import argparse
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from string import Template
from typing import Any

from inbox._core.config.settings import Settings
from inbox._core.errors import ConfigError
from inbox._core.runtime.extras import install_command

__all__ = ["register"]

# The shared-secret schemes `inbox dev` can make a development secret for; the others
# (alipay, wechatpay: key pairs; hmac: a recipe) are added to inbox.toml by hand.
PROVIDERS = ("stripe", "github", "shopify", "slack", "twilio", "standard-webhooks")
# Twilio signs the URL it calls: behind a proxy or tunnel, the public one.
_EXTRA = {"twilio": '# public_url = "https://example.com/webhooks/twilio"\n'}


def _template(name: str) -> Template:
    text = resources.files("inbox._cli").joinpath("init_templates", name).read_text("utf-8")
    return Template(text)


def _source_name(provider: str) -> str:
    return "webhooks" if provider == "standard-webhooks" else provider


def _files(providers: list[str]) -> dict[str, str]:
    sources = "".join(
        _template("source.toml.tmpl").substitute(
            name=_source_name(p),
            verifier=p,
            variable=_source_name(p).upper() + "_WEBHOOK_SECRET",
            extra=_EXTRA.get(p, ""),
        )
        for p in providers
    )
    stripe = (
        _template("stripe_handler.py.tmpl").substitute(name="stripe")
        if "stripe" in providers
        else ""
    )
    return {
        "inbox.toml": _template("inbox.toml.tmpl").substitute(sources=sources),
        "handlers.py": _template("handlers.py.tmpl").substitute(stripe=stripe).rstrip() + "\n",
        "schema/001_tables.sql": _template("tables.sql.tmpl").substitute(),
        "test_handlers.py": _template("test_handlers.py.tmpl").substitute(
            source=_source_name(providers[0]),
            # The table the first source's sample lands in (Stripe's is a payment).
            table="payments" if providers[0] == "stripe" else "received_webhooks",
        ),
    }


def _providers(text: str) -> list[str]:
    chosen = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PROVIDERS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown provider {', '.join(unknown) or '(none)'}; choose from {', '.join(PROVIDERS)}"
        )
    return list(dict.fromkeys(chosen))


def _init(args: argparse.Namespace, settings: Settings) -> int:
    target = Path(args.directory)
    files = _files(args.provider)
    existing = [name for name in files if (target / name).exists()]
    if existing and not args.force:
        raise ConfigError(
            f"{target / existing[0]} exists already"
            f"{f' (and {len(existing) - 1} more)' if len(existing) > 1 else ''};"
            " nothing was written (--force overwrites)"
        )
    for name, text in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    where = "" if target == Path() else f"cd {target} && "
    print(f"next: {where}inbox dev")
    # The generated test needs pytest, which a project's own tools may already bring;
    # pg-inbox's test extra does when they do not.
    needs = "" if find_spec("pytest") else f"; it needs pytest: {install_command('test')}"
    print(f"test: python -m pytest   (runs test_handlers.py{needs})")
    return 0


def register(commands: Any) -> None:
    init = commands.add_parser(
        "init", help="start a project: inbox.toml, handlers.py, schema/, test_handlers.py"
    )
    init.add_argument("directory", nargs="?", default=".", help="where (default: here)")
    init.add_argument(
        "--provider",
        type=_providers,
        default=["stripe"],
        help=f"comma-separated sources to configure (default stripe): {', '.join(PROVIDERS)}",
    )
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.set_defaults(handler=_init)
