"""Names a package exports but loads on first use (PEP 562's module ``__getattr__``)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["load_lazily"]


def load_lazily(namespace: dict[str, Any], modules: Mapping[str, str], name: str) -> Any:
    """Import ``name`` from ``modules[name]``, keep it in ``namespace``, and return it.

    ``namespace`` is the package's ``globals()``: once kept there, later look-ups no longer
    reach the package's ``__getattr__``. An unknown name is the usual ``AttributeError``.
    """
    module = modules.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
