"""Where the writers (``inbox._writing``) import ``translate_driver_errors`` from; it lives in
``inbox._core.database.db``, which every other room imports (import-linter holds that). This
module goes once the writers import the database room too."""

from inbox._core.database.db import translate_driver_errors

__all__ = ["translate_driver_errors"]
