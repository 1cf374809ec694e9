"""What ``inbox dev`` sets up around the user's settings: the built-in demo configuration for
an empty folder, development secrets for sources that have none, the example handlers'
schema, and the command line the banner prints.

Development secrets are generated once and kept in ``<data_dir>/dev-secrets.json`` (0600),
so ``inbox dev`` and ``inbox send`` in another terminal sign and verify with the same ones.
``inbox serve`` never uses them: in production a source without a secret is an error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import SecretStr

from inbox._core.config.settings import Settings, SourceSettings
from inbox._core.errors import ConfigError
from inbox._core.runtime.embedded import private_file
from inbox._providers import provider

__all__ = [
    "DEMO_CONFIG_FILE",
    "EXAMPLES_ROUTER",
    "apply_sql",
    "examples_schema",
    "inbox_command",
    "sql_files",
    "with_dev_secrets",
    "with_secrets",
    "write_demo_config",
]

EXAMPLES_ROUTER = "processors.examples.handlers:router"
DEMO_CONFIG_FILE = "demo.toml"
DEV_SECRETS_FILE = "dev-secrets.json"

# The schemes whose secret is a shared string `inbox dev` can make up; asymmetric ones
# (alipay, wechatpay) need a key pair the user configures.
_DEMO_CONFIG = """\
# Written by `inbox dev` in a folder without an inbox.toml: the built-in demo. Its sources
# have no secrets here; `inbox dev` and `inbox send` use the development secrets generated
# once in {secrets_file}. `inbox init` makes a project of your own.

[receiver]
host = "{host}"
port = {port}

[app]
router = "{router}"

[[sources]]
name = "stripe"
verifier = "stripe"

[[sources]]
name = "github"
verifier = "github"

[[sources]]
name = "demo"
verifier = "standard-webhooks"
"""


def write_demo_config(settings: Settings) -> Path:
    """Write (again, with the receiver's current address) the demo configuration."""
    data_dir = settings.database.data_dir
    path = data_dir / DEMO_CONFIG_FILE
    text = _DEMO_CONFIG.format(
        secrets_file=data_dir / DEV_SECRETS_FILE,
        host=settings.receiver.host,
        port=settings.receiver.port,
        router=EXAMPLES_ROUTER,
    )
    private_file(path, text)
    return path


def _new_secret(verifier: str) -> str:
    made_up = provider(verifier).dev_secret
    assert made_up is not None, verifier  # _needs_secret asked first
    return made_up()


def _needs_secret(source: SourceSettings) -> bool:
    return provider(source.verifier).dev_secret is not None and not source.secret_values()


def with_secrets(
    settings: Settings, made_up: Mapping[str, str] | None = None
) -> tuple[Settings, list[str]]:
    """``settings`` with a secret for each shared-secret source that has none: the one in
    ``made_up`` under its name, else (``made_up`` None) a fresh one; and their names."""
    sources = []
    filled = []
    for source in settings.sources:
        if _needs_secret(source):
            secret = _new_secret(source.verifier) if made_up is None else made_up.get(source.name)
            if secret is not None:
                source = source.model_copy(update={"secrets": [SecretStr(secret)]})
                filled.append(source.name)
        sources.append(source)
    if not filled:
        return settings, []
    return settings.model_copy(update={"sources": sources}), filled


def with_dev_secrets(settings: Settings, *, create: bool) -> tuple[Settings, list[str]]:
    """``with_secrets`` from the development secrets kept in the data directory; missing
    ones are generated (and kept) only when ``create``."""
    wanting = [s for s in settings.sources if _needs_secret(s)]
    if not wanting:
        return settings, []
    path = settings.database.data_dir / DEV_SECRETS_FILE
    try:
        kept: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    if create and any(s.name not in kept for s in wanting):
        for source in wanting:
            kept.setdefault(source.name, _new_secret(source.verifier))
        private_file(path, json.dumps(kept, indent=2) + "\n")
    return with_secrets(settings, kept)


def sql_files(paths: Iterable[Path]) -> list[Path]:
    """SQL files, and the ``*.sql`` of folders in name order."""
    return [f for p in paths for f in (sorted(p.glob("*.sql")) if p.is_dir() else [p])]


def apply_sql(url: str, files: Iterable[Path]) -> None:
    """Run each file as written (as ``psql -f`` would), each in a transaction of its own."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for path in files:
            try:
                with conn.transaction():
                    # The user's own DDL file, not a query built from input.
                    conn.execute(path.read_bytes())
            except OSError as exc:
                raise ConfigError(f"{path}: cannot read it: {exc}", path=str(path)) from exc
            except psycopg.Error as exc:
                first = str(exc).strip().splitlines()[0]
                raise ConfigError(f"{path}: {first}", path=str(path)) from exc


def examples_schema() -> Path:
    """The tables of the example handlers, found without importing ``processors``."""
    spec = importlib.util.find_spec("processors")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the processors package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "examples" / "schema.sql"


def inbox_command(config: str | os.PathLike[str] | None) -> str:
    """How to run this same ``inbox`` from another terminal: the banner prints it."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "__main__.py":  # python -m inbox
        command = [sys.executable, "-m", "inbox"]
    else:
        real = argv0.resolve()
        on_path = shutil.which("inbox")
        same = on_path is not None and Path(on_path).resolve() == real
        command = ["inbox" if same else str(real)]
    if config is not None:
        command += ["--config", str(config)]
    return shlex.join(command)
