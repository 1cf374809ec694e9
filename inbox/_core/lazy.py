"""Names a package exports: reported as the package's own, and some loaded on first use
(PEP 562's module ``__getattr__``)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

__all__ = ["load_lazily", "own_exports"]


def _own(value: Any, package: str) -> None:
    # Set on classes and functions only: a constant's ``__module__`` is its type's.
    if inspect.isclass(value) or inspect.isfunction(value):
        value.__module__ = package


def own_exports(namespace: dict[str, Any]) -> None:
    """Report every class and function of ``namespace["__all__"]`` that is already loaded as
    the package's own, as psycopg_pool and httpx do: reprs, tracebacks and documentation say
    ``inbox.InboxWriter``, not the private module it lives in. A name ``load_lazily`` loads
    later is claimed when it loads.
    """
    package = namespace["__name__"]
    for name in namespace["__all__"]:
        if name in namespace:
            _own(namespace[name], package)


def load_lazily(namespace: dict[str, Any], modules: Mapping[str, str], name: str) -> Any:
    """Import ``name`` from ``modules[name]``, keep it in ``namespace``, and return it.

    ``namespace`` is the package's ``globals()``: once kept there, later look-ups no longer
    reach the package's ``__getattr__``. A name of the package's ``__all__`` is claimed as
    its own; any other (an alias of a name another package exports) is left as it is. An
    unknown name is the usual ``AttributeError``.
    """
    module = modules.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    if name in namespace["__all__"]:
        _own(value, namespace["__name__"])
    namespace[name] = value
    return value
