"""Settings: ``INBOX_*`` environment variables over a TOML file, validated by pydantic-settings.

The file is found from ``--config``, else ``INBOX_CONFIG``, else ``./inbox.toml`` (optional).
Nested keys use ``__`` in the environment: ``INBOX_WORKER__MAX_ATTEMPTS=5``.

This module composes the sections (``inbox._core.config.sections``: one model per table of the
file, each value's checks) into ``Settings`` and loads it; the other parts import the
sections they use from here.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from inbox._core.config.secrets import config_error
from inbox._core.config.sections import (
    MAX_BATCH_SIZE,
    AppSettings,
    ConsoleSettings,
    DatabaseSettings,
    ReceiverSettings,
    RetentionSettings,
    WorkerSettings,
    require_unique,
)
from inbox._core.config.sources import SourceSettings
from inbox._core.errors import ConfigError

# With Settings, the sections the other parts take from here (the rest are only its fields).
__all__ = [
    "DEFAULT_CONFIG_PATH",
    "MAX_BATCH_SIZE",
    "ConsoleSettings",
    "DatabaseSettings",
    "ReceiverSettings",
    "Settings",
    "SourceSettings",
    "WorkerSettings",
    "load_settings",
    "settings_file",
]

DEFAULT_CONFIG_PATH = Path("inbox.toml")


class Settings(BaseSettings):
    """Every setting, frozen: a field per table of the TOML file, each key also an ``INBOX_*``
    variable, which wins (docs/operations.md). ``load_settings`` reads the file;
    ``Settings(...)`` itself reads the environment and its keyword arguments only."""

    model_config = SettingsConfigDict(
        env_prefix="INBOX_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        hide_input_in_errors=True,  # as the sections' (sections.Section)
    )

    database: DatabaseSettings = DatabaseSettings()
    sources: list[SourceSettings] = Field(default_factory=list)
    worker: WorkerSettings = WorkerSettings()
    receiver: ReceiverSettings = ReceiverSettings()
    retention: RetentionSettings = RetentionSettings()
    app: AppSettings = AppSettings()
    console: ConsoleSettings = ConsoleSettings()

    _config_file: Path | None = PrivateAttr(default=None)

    @property
    def config_file(self) -> Path | None:
        """The TOML file these settings were read from (None: environment and defaults)."""
        return self._config_file

    @field_validator("sources")
    @classmethod
    def _unique_source_names(cls, sources: list[SourceSettings]) -> list[SourceSettings]:
        require_unique("source", [s.name for s in sources])
        return sources

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """pydantic-settings' hook: keyword arguments, then the environment (with
        ``INBOX_DATABASE_URL``), then the file ``load_settings`` is reading, if any."""
        toml_path = _TOML_PATH_FOR_LOAD.get("path")
        sources: list[PydanticBaseSettingsSource] = [
            init_settings,
            env_settings,
            _DatabaseUrlVariable(settings_cls),
        ]
        if toml_path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)

    def source(self, name: str) -> SourceSettings | None:
        """The ``[[sources]]`` entry named ``name``, or None."""
        return next((s for s in self.sources if s.name == name), None)


class _DatabaseUrlVariable(PydanticBaseSettingsSource):
    """``INBOX_DATABASE_URL``, the conventional name, for ``database.url`` (the nested form
    ``INBOX_DATABASE__URL`` wins when both are set)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        url = os.environ.get("INBOX_DATABASE_URL")
        return {"database": {"url": url}} if url else {}


# pydantic-settings builds its sources inside a classmethod; the file chosen by load_settings
# reaches it through this one-slot holder (settings are loaded once, at start-up).
_TOML_PATH_FOR_LOAD: dict[str, Path | None] = {"path": None}


def _config_path(explicit: str | Path | None) -> tuple[Path | None, bool]:
    """The file to read and whether its absence is an error (it is, when named explicitly)."""
    if explicit is not None:
        return Path(explicit), True
    from_env = os.environ.get("INBOX_CONFIG")
    if from_env:
        return Path(from_env), True
    return DEFAULT_CONFIG_PATH, False


def settings_file(config: str | Path | None = None) -> Path | None:
    """The file ``load_settings(config)`` reads, if any."""
    path, required = _config_path(config)
    if path is not None and not path.exists():
        if required:
            raise ConfigError(f"config file {path} does not exist", path=str(path))
        return None
    return path


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Load and validate settings; a bad file raises ``ConfigError`` naming file and field."""
    path = settings_file(config)
    if path is not None:
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}", path=str(path)) from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text ({exc})", path=str(path)) from exc
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read it: {exc.strerror}", path=str(path)) from exc
    _TOML_PATH_FOR_LOAD["path"] = path
    try:
        settings = Settings(**overrides)
        settings._config_file = path
        return settings
    except ValidationError as exc:
        raise config_error(exc, path) from exc
    except SettingsError as exc:  # a variable holding a section or a list that is not JSON
        field = re.search(r'field "([^"]+)"', str(exc))
        name = f"INBOX_{field.group(1).upper()}" if field else "an INBOX_* variable"
        raise ConfigError(
            f"invalid configuration in environment variable {name}: not valid JSON (a section"
            """ or list in one variable is JSON, e.g. INBOX_WORKER='{"max_attempts": 5}';"""
            " or set one key: INBOX_WORKER__MAX_ATTEMPTS=5)",
            field=field.group(1) if field else None,
        ) from exc
    finally:
        _TOML_PATH_FOR_LOAD["path"] = None
