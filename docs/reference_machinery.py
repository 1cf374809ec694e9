"""A griffe extension for the API reference (mkdocs.yml): a class's page leaves out what
Python and pydantic call, not its users (the reference shows the public names, and these
are public only by their spelling)."""

from __future__ import annotations

from typing import Any

import griffe

MACHINERY = {"__slots__", "__post_init__", "model_config", "settings_customise_sources"}


class HideMachinery(griffe.Extension):
    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        for name in MACHINERY & set(cls.members):
            cls.del_member(name)
