"""The core's config room: the settings, loaded and checked (``settings``, over the sections'
models in ``sections`` and ``sources``), the key/type spec grammar (``specs``), the providers'
names a source may use (``schemes``), secrets files and the redacted configuration report
(``secrets``), and passwords masked in connection strings (``masking``).

May import: the modules at the core's root (errors, logs); never the database or runtime
rooms, which read the settings (import-linter, pyproject.toml).
"""

__all__ = ["masking", "schemes", "secrets", "sections", "settings", "sources", "specs"]
