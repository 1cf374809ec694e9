"""The core room: what every other room, and ``processors``, share. Three rooms of its own
over what every room uses:

- ``runtime``: running a command or a daemon on a machine: the database URL a command runs
  against (``resolve``), the embedded PostgreSQL (``embedded``), the daemons' event loop
  (``daemon``) and what they tell systemd (``systemd``), optional extras (``extras``), the
  argparse number types both sides' commands use (``arguments``);
- ``database``: what is said to PostgreSQL and how: the driver's errors translated (``db``),
  what a transaction pooler allows (``pooler``), a pool's care (``pool_care``) and outage
  reports (``outage``), the migrations runner (``migrate``), the roles (``roles``) and each
  part's start-up privilege check (``privileges``);
- ``config``: the settings (``settings``, composed of the sections' models in ``sections``
  and ``sources``), the key/type spec grammar they validate (``specs``), the providers'
  names (``schemes``), secrets and the redacted report (``secrets``, ``masking``);
- below them, the modules every room uses: the error tree (``errors``), the loggers
  (``logs``), OpenTelemetry when the host set one up (``tracing``), the named-SQL loader
  (``sql``) and lazy exports (``lazy``).

Runtime and database never import each other; both may use config. ``db``, ``pooler`` and
``pool_care`` here are the writers' paths to the database room's modules, for them alone.

May import: nothing of ``inbox`` outside this room. It is the only internal code that
``processors`` may import (import-linter holds these rules, pyproject.toml).
"""

__all__ = ["config", "database", "errors", "lazy", "logs", "runtime", "sql", "tracing"]
