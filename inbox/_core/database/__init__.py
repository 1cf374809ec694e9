"""The core's database room: what is said to PostgreSQL, and how. The driver's errors
translated at one boundary (``db``), what a transaction pooler allows (``pooler``), a pool's
care (``pool_care``) and outage reports (``outage``); the migrations runner (``migrate``), the
database roles (``roles``) and each part's start-up privilege check (``privileges``).

May import: the config room and the modules at the core's root; never the runtime room
(import-linter, pyproject.toml).
"""

__all__ = ["db", "migrate", "outage", "pool_care", "pooler", "privileges", "roles"]
