"""The CLI room, the composition root: the ``inbox`` command and everything only it needs.

Owns the entry point (``main``), each command family (``dev``, ``init``, ``receiver``,
``operator``, ``replay``, ``console``), their shared argument helpers and tables (``common``),
``inbox init``'s templates (``init_templates/``) and the one place logging is configured and
rendered (``logs``). ``inbox dev`` is a sub-package: the run, its worker, its guardian, and
what it sets up around the user's settings (``dev.env``).

May import: every room of ``inbox``. ``processors`` only through the ``pg_inbox.cli`` entry
point (``inbox worker``), loaded when the command line is built, never imported by name.
"""

__all__ = [
    "common",
    "console",
    "dev",
    "init",
    "logs",
    "main",
    "operator",
    "receiver",
    "replay",
]
