"""The version of the code a worker runs, and the source lines its tracebacks show.

A worker's version is ``[app] version`` when it is set (a deploy's git commit), else a
fingerprint of its handlers' source files: the modules that define the router's handlers,
and every module loaded from the same packages. Workers report it (``inbox_workers``), each
attempt records it, and a replay may require it, so that a fix is replayed only on workers
that run the fix.

Its tracebacks must show the code that ran. Python formats a traceback with the source file
as it is on disk when the error is formatted, so a file edited under a running worker (a
deploy that replaces the files, an editor in development) put the new lines under the old
error. The lines read at start-up are kept in ``linecache`` as lines of a file whose
changes are not to be looked for (no modification time, as ``linecache`` keeps the source of
modules loaded from elsewhere than a file), so every traceback of this process shows them.
"""

from __future__ import annotations

import hashlib
import linecache
import sys
from dataclasses import dataclass
from pathlib import Path

from processors._model.router import Router

__all__ = ["CodeVersion", "code_version"]

# How much of the fingerprint's hex digest a version shows: enough to tell deploys apart.
FINGERPRINT_LENGTH = 12


@dataclass(frozen=True, slots=True)
class CodeVersion:
    version: str
    source: str
    """Where the version came from: "app" ([app] version) or "code" (the fingerprint)."""
    files: tuple[Path, ...]
    """The handlers' source files the fingerprint covers (and whose lines are pinned)."""


def _module_file(name: str) -> Path | None:
    """A loaded module's source file, as its code names it (tracebacks look it up so)."""
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    return Path(file) if isinstance(file, str) and file.endswith(".py") else None


def _roots(router: Router) -> set[Path]:
    """The handlers' packages (their folders), or the module files of top-level modules."""
    roots: set[Path] = set()
    for route in router.routes:
        top = (getattr(route.handler, "__module__", None) or "").partition(".")[0]
        module = sys.modules.get(top)
        if module is None:
            continue
        locations = list(getattr(module, "__path__", []))
        if locations:
            roots.update(Path(location).resolve() for location in locations)
        elif (file := _module_file(top)) is not None:
            roots.add(file.resolve())
    return roots


def _handler_modules(router: Router) -> dict[str, Path]:
    """Every loaded module under the handlers' roots, by name."""
    roots = _roots(router)
    found: dict[str, Path] = {}
    for name in list(sys.modules):
        file = _module_file(name)
        if file is None:
            continue
        real = file.resolve()
        if any(real == root or real.is_relative_to(root) for root in roots):
            found[name] = file
    return found


def code_version(router: Router, configured: str | None = None) -> CodeVersion:
    """The version of ``router``'s code (``configured`` wins), its lines pinned for
    tracebacks. Call it once the handlers are imported."""
    modules = _handler_modules(router)
    digest = hashlib.sha256()
    # The routes too: handlers defined outside any file (exec'd code) still count.
    for route in router.routes:
        digest.update(f"{route.source}\0{route.event_type}\0{route.name}\0".encode())
    for name in sorted(modules):
        source = _pin(modules[name])
        # Names, not paths: the same code checked out elsewhere has the same version.
        digest.update(name.encode() + b"\0" + source + b"\0")
    files = tuple(modules[name] for name in sorted(modules))
    if configured:
        return CodeVersion(configured, "app", files)
    return CodeVersion(digest.hexdigest()[:FINGERPRINT_LENGTH], "code", files)


def _pin(file: Path) -> bytes:
    """The file's bytes now, its lines kept for tracebacks (see the module's docstring)."""
    try:
        source = file.read_bytes()
    except OSError:
        return b""
    lines = source.decode("utf-8", errors="replace").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # linecache's entry: (size, mtime, lines, full name); a None mtime is never re-checked.
    linecache.cache[str(file)] = (len(source), None, lines, str(file))
    return source
