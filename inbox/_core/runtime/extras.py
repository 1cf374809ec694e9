"""The optional parts of pg-inbox (``pip install 'pg-inbox[EXTRA]'``), loaded when a command
first needs them, so that a writer-only install stays light."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shlex
from importlib import metadata
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit

from inbox._core.errors import ConfigError

__all__ = ["install_command", "require_extra", "require_installed"]

DISTRIBUTION = "pg-inbox"


def require_extra(module: str, extra: str, needed_by: str) -> ModuleType:
    """Import ``module``, or say which extra brings it (``ConfigError``: the CLI's exit 2)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{needed_by} needs the {extra} extra: {install_command(extra)}") from exc


def require_installed(module: str, extra: str, needed_by: str) -> None:
    """``require_extra`` without importing ``module`` (one whose import is heavy or noisy)."""
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"{needed_by} needs the {extra} extra: {install_command(extra)}")


def install_command(extra: str, direct_url: str | None = None) -> str:
    """The ``pip install`` that adds ``extra`` to pg-inbox as it was installed here.

    From a checkout or a built wheel, the package index has nothing to offer: the command
    names that folder (``-e`` when the install is editable, so it stays so) or that wheel.
    ``direct_url`` is the install's PEP 610 record, empty when there is none (an install from
    an index); by default it is read from the installed distribution.
    """
    if direct_url is None:
        try:
            direct_url = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        except metadata.PackageNotFoundError:
            direct_url = None
    try:
        origin = json.loads(direct_url) if direct_url else {}
    except ValueError:
        origin = {}
    url = urlsplit(str(origin.get("url", "")))
    if url.scheme != "file":  # an index, or a VCS URL: the name finds it again
        return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"
    target = shlex.quote(f"{Path(unquote(url.path))}[{extra}]")
    editable = bool(origin.get("dir_info", {}).get("editable"))
    return f"pip install {'-e ' if editable else ''}{target}"
