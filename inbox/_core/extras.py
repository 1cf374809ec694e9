"""The optional parts of pg-inbox (``pip install 'pg-inbox[EXTRA]'``), loaded when a command
first needs them, so that a writer-only install stays light."""

from __future__ import annotations

import importlib
from types import ModuleType

from inbox._core.errors import ConfigError

__all__ = ["require_extra"]


def require_extra(module: str, extra: str, needed_by: str) -> ModuleType:
    """Import ``module``, or say which extra brings it (``ConfigError``: the CLI's exit 2)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{needed_by} needs the {extra} extra: pip install 'pg-inbox[{extra}]'"
        ) from exc
