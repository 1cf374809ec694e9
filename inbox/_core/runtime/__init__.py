"""The core's runtime room: running a command or a daemon on a machine. The database URL a
command runs against (``resolve``: the configured one, a running ``inbox dev``'s, or a new
embedded server), the embedded PostgreSQL (``embedded``), the daemons' event loop
(``daemon``) and what they tell systemd (``systemd``), optional extras (``extras``), and the
argparse number types both sides' commands use (``arguments``).

May import: the config room and the modules at the core's root; never the database room
(import-linter, pyproject.toml).
"""

__all__ = ["arguments", "daemon", "embedded", "extras", "resolve", "systemd"]
