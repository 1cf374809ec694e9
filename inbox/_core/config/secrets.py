"""Secrets from mounted files, and the effective configuration with every secret
redacted (``inbox config check``).

A ``secrets_file`` holds one secret per line, or several separated by commas (the same
form as ``secrets_env``); whitespace around each is dropped, blank lines and lines starting
with ``#`` are ignored. Its contents never appear in a message: an error names the file.

Also the settings' error boundary (``config_error``): a bad configuration's one message, with
every secret's value redacted and passwords in connection strings masked.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from inbox._core.config.masking import mask_password
from inbox._core.errors import ConfigError
from inbox._core.logs import get_logger

__all__ = [
    "REDACTED",
    "config_error",
    "config_report",
    "mask_password",
    "names_a_secret",
    "read_secrets_file",
    "warn_if_readable_by_others",
]

REDACTED = "<redacted>"

# Keys whose values are secret even when held as plain text.
_SECRET_KEYS = frozenset({"secrets", "private_key", "secret_key", "password_hash"})


def names_a_secret(location: Sequence[object]) -> bool:
    """True when a setting's location (``("sources", 0, "secrets", 1)``) is in a secret."""
    return any(part in _SECRET_KEYS for part in location)


# The files already warned about: a part reads its secrets more than once.
_WARNED: set[Path] = set()


def warn_if_readable_by_others(path: Path, setting: str) -> None:
    """One warning per file when a key or secrets file is open to its group or to others,
    as ssh and PostgreSQL say of theirs (PostgreSQL allows the group's read of a file that
    root owns, for a group of services such as ssl-cert)."""
    try:
        status = path.stat()  # through a symlink: Kubernetes mounts secrets as links
    except OSError:
        return  # reading it says what is wrong
    exposed = status.st_mode & 0o077
    if status.st_uid == 0:
        exposed &= ~0o040
    if not exposed or path in _WARNED:
        return
    _WARNED.add(path)
    get_logger("inbox").warning(
        "secret_file_readable_by_others",
        setting=setting,
        path=str(path),
        mode=f"{status.st_mode & 0o777:04o}",
        fix=f"chmod 600 {path} (Kubernetes: defaultMode 0400 on the secret's volume)",
    )


def read_secrets_file(path: Path, source: str) -> list[str]:
    field = f"sources.{source}"
    warn_if_readable_by_others(path, f"sources.{source}.secrets_file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"source {source!r}: cannot read secrets_file {path}: {exc.strerror};"
            " mount the secret there, or remove secrets_file",
            path=str(path),
            field=field,
        ) from exc
    except UnicodeDecodeError:
        raise ConfigError(
            f"source {source!r}: secrets_file {path} is not UTF-8 text", path=str(path), field=field
        ) from None
    values: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        values.extend(v.strip() for v in line.split(",") if v.strip())
    return values


def _redact(key: str, value: Any) -> Any:
    if isinstance(value, SecretStr) or (key in _SECRET_KEYS and value):
        if isinstance(value, list):
            return [REDACTED] * len(value)
        return REDACTED
    if (isinstance(value, str) and "://" in value) or (key.endswith("url") and value):
        return mask_password(str(value))
    return value


def _walk(prefix: str, value: Any) -> Iterator[tuple[str, str, Any]]:
    """(dotted path, last key, value) of every leaf; a source is named by its name."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if (isinstance(inner, Mapping) and key != "options") or key == "sources":
                yield from _walk(f"{prefix}{key}.", inner)
            else:
                yield f"{prefix}{key}", str(key), inner
    elif isinstance(value, list):  # the sources
        for item in value:
            yield from _walk(f"{prefix}{item.get('name', '?')}.", item)


def _in_file(data: Mapping[str, Any], dotted: str) -> bool:
    parts = dotted.split(".")
    node: Any = data
    if parts[0] == "sources":
        node = next((s for s in data.get("sources", []) if s.get("name") == parts[1]), None)
        parts = parts[2:]
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _origin(dotted: str, file_data: Mapping[str, Any], path: Path | None) -> str:
    if not dotted.startswith("sources."):
        names = ["INBOX_" + dotted.replace(".", "__").upper()]
        if dotted == "database.url":
            names.append("INBOX_DATABASE_URL")
        for name in names:
            if name in os.environ:
                return f"${name}"
    if path is not None and _in_file(file_data, dotted):
        return str(path)
    return "default"


def config_report(dumped: Mapping[str, Any], path: Path | None) -> list[tuple[str, Any, str]]:
    """(setting, value with secrets redacted, where it came from) for every setting."""
    file_data: Mapping[str, Any] = {}
    if path is not None:
        file_data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [
        (dotted, _redact(key, value), _origin(dotted, file_data, path))
        for dotted, key, value in _walk("", dumped)
    ]


# The settings' error boundary (inbox._core.config.settings.load_settings).


def _error_origin(loc: tuple[int | str, ...], path: Path | None) -> str:
    """Where the value at ``loc`` came from: the variable that set it, else the file."""
    # The variable may set the value itself or a section or list holding it (INBOX_SOURCES).
    names = ["INBOX_" + "__".join(str(p) for p in loc[:n]).upper() for n in range(len(loc), 0, -1)]
    if loc[:2] == ("database", "url"):
        names.append("INBOX_DATABASE_URL")
    for name in names:
        if name in os.environ:
            return f"environment variable {name}"
    return str(path) if path is not None else "environment (INBOX_*)"


def _masked(value: Any) -> Any:
    return mask_password(value) if isinstance(value, str) else value


def config_error(exc: ValidationError, path: Path | None) -> ConfigError:
    """The one error a bad configuration gives: every problem, where each came from, and no
    secret's value, not even inside a message."""
    problems = []
    first_field = None
    origins = set()
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        first_field = first_field or field
        origins.add(_error_origin(err["loc"], path))
        got = err.get("input")
        message = err["msg"].removeprefix("Value error, ")
        if names_a_secret(err["loc"]):
            # Whatever was given there may be the secret itself, even when it is the wrong
            # type or shape: never shown, not even inside the message.
            shown = f" = {REDACTED}" if got is not None else ""
            if isinstance(got, str | int | float) and str(got):
                message = message.replace(str(got), REDACTED)
        else:
            # Masked before repr(), whose escapes would hide a quoted password's end.
            shown = "" if isinstance(got, dict | list) else f" = {_masked(got)!r}"
        problems.append(f"{field}{shown}: {message}")
    where = " and ".join(sorted(origins))
    message = f"invalid configuration in {where}: " + "; ".join(problems)
    return ConfigError(message, path=str(path) if path else None, field=first_field)
