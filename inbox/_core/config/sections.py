"""The sections of the settings: one pydantic model per table of ``inbox.toml``
(``[database]``, ``[worker]``, ``[receiver]``, ``[retention]``, ``[app]``, ``[console]`` and
its ``[[console.users]]``; each ``[[sources]]`` entry is ``sources``'), with each value's
checks.

``settings`` composes them into ``Settings`` and loads it (file, environment), and re-exports
the sections the other parts use: they import them from there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    IPvAnyNetwork,
    SecretStr,
    field_validator,
)

from inbox._core.config.secrets import mask_password, warn_if_readable_by_others
from inbox._core.errors import ConfigError

__all__ = [
    "MAX_BATCH_SIZE",
    "AppSettings",
    "ConsoleSettings",
    "ConsoleUser",
    "DatabaseSettings",
    "ReceiverSettings",
    "RetentionSettings",
    "Section",
    "WorkerSettings",
    "require_unique",
]

# A batch is one transaction holding its rows' locks. Its handlers share one savepoint; after
# a failure they run again each in a subtransaction of its own, at most 64 of them (PostgreSQL
# caches 64 subtransaction ids per transaction, past which every session's snapshots slow
# down), the rest released to the next batch (processors._running.savepoints.MAX_ISOLATED). With
# savepoints = "event" a batch holds at most 64 events (processors._worker.worker).
MAX_BATCH_SIZE = 256


def require_unique(kind: str, names: list[str]) -> None:
    """Refuse a list of named entries (sources, users) in which a name repeats."""
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"{kind} names must be unique; repeated: {', '.join(duplicated)}")


class Section(BaseModel):
    """What every section is: no unknown keys, frozen, and no input echoed in an error."""

    # A ValidationError's text never carries the values given (a secret of the wrong type
    # would be echoed): the one message users see is secrets.config_error's, which redacts them.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class DatabaseSettings(Section):
    """Where PostgreSQL is. With no ``url``, the embedded server is started in ``data_dir``."""

    url: str | None = None
    # One login role per part (docs/security.md); each falls back to `url`.
    receiver_url: str | None = None
    worker_url: str | None = None
    operator_url: str | None = None
    retention_url: str | None = None
    data_dir: Path = Path(".inbox")
    pool_min_size: int = Field(default=1, ge=0)
    pool_max_size: int = Field(default=10, ge=1)
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    # The wake-up mode of writers: "after_commit" sends one coalesced, payload-free NOTIFY
    # after commit (at most one per `notify_interval_seconds` per process); "in_transaction"
    # sends it inside the writing transaction, which serialises commits under concurrency.
    notify: Literal["after_commit", "in_transaction", "off"] = "after_commit"
    notify_interval_seconds: float = Field(default=0.01, ge=0)
    # What is between the parts and PostgreSQL (inbox._core.database.pooler, docs/deploy.md):
    # "transaction" for a transaction pooler (PgBouncer, Supabase's or Neon's pooled URL, RDS
    # Proxy); "auto" takes a URL on port 6432 or 6543, or a host named "...pooler..." or
    # "...proxy-...", for one.
    pooler: Literal["auto", "none", "transaction"] = "auto"
    # psycopg's prepared statements: "auto" prepares on a direct URL and not behind a
    # pooler; "on" behind a pooler that keeps them per client (PgBouncer 1.21 and later with
    # max_prepared_statements above 0), which no URL tells; "off" never.
    prepared_statements: Literal["auto", "on", "off"] = "auto"
    # A direct (not pooled) URL for the workers' LISTEN connection; without one, a pooled
    # worker polls (every [worker] poll_interval_seconds).
    listen_url: str | None = None

    @field_validator(
        "url", "receiver_url", "worker_url", "operator_url", "retention_url", "listen_url"
    )
    @classmethod
    def _valid_url(cls, value: str | None) -> str | None:
        # Checked here, without connecting, so a typo is a one-line settings error naming
        # the variable, not a driver error from deep inside whichever command ran first.
        if not value:
            return value
        import psycopg  # the driver is loaded only when there is a URL to check
        from psycopg.conninfo import conninfo_to_dict

        if "://" in value and value.partition("?")[0].count("@") > 1:
            # libpq would take the text after the first "@" for the host, and its errors
            # would quote that part of the password.
            raise ValueError(
                'the user or password holds an "@"; percent-encode it as %40'
                " (postgresql://USER:PASSWORD@HOST/DBNAME)"
            )
        try:
            params = conninfo_to_dict(value)
        except psycopg.ProgrammingError as exc:
            # libpq's message quotes the text it stumbled on, which may be the password.
            reason = str(exc).strip().removesuffix(" in connection info string")
            raise ValueError(
                f"not a PostgreSQL connection string ({mask_password(reason, value)});"
                " expected postgresql://USER@HOST:5432/DBNAME or key=value pairs"
            ) from None
        port = str(params.get("port", ""))
        if port and not all(p.strip().isdigit() for p in port.split(",")):
            # A "/" in a URL's password ends libpq's host part early: the "port" may be it.
            raise ValueError(mask_password(f'the port must be a number, got "{port}"', value))
        return value


class WorkerSettings(Section):
    """The ``[worker]`` table: how a worker claims, runs, retries and gives up on events
    (docs/processing.md). ``Worker`` and ``processors.testing`` take one."""

    max_attempts: int = Field(default=25, ge=1)
    max_crashes: int = Field(default=5, ge=1)
    backoff_base_seconds: float = Field(default=1.0, gt=0)
    backoff_max_seconds: float = Field(default=3600.0, gt=0)
    poll_interval_seconds: float = Field(default=5.0, gt=0)
    batch_size: int = Field(default=MAX_BATCH_SIZE, ge=1)
    handler_timeout_seconds: float = Field(default=30.0, gt=0)
    listen: bool = True  # False = poll only (PgBouncer in transaction pooling mode)
    unrouted: Literal["skip", "fail"] = "skip"
    # "batch": the handlers of a batch share one savepoint; a failure rolls them all back and
    # re-runs the others, each in a savepoint of its own. "event": a savepoint round trip per
    # event, so a handler never runs again because a neighbour failed (for handlers with
    # effects outside the database that must not repeat).
    savepoints: Literal["batch", "event"] = "batch"
    # What the worker logs of the events it settles (failures are always logged): "batch",
    # one info line per committed batch (`batch_processed`: outcome counts, sources,
    # duration); "event", one line per processed event (`event_processed`); "none".
    log_events: Literal["batch", "event", "none"] = "batch"
    # The event loop of `inbox worker` (inbox._core.runtime.daemon): "auto", uvloop where it is
    # installed, else asyncio's own; "asyncio" for handlers whose libraries need it.
    event_loop: Literal["auto", "asyncio", "uvloop"] = "auto"

    @field_validator("batch_size")
    @classmethod
    def _batch_within_the_cap(cls, value: int) -> int:
        if value > MAX_BATCH_SIZE:
            raise ValueError(
                f"at most {MAX_BATCH_SIZE}: a batch is one transaction that holds its rows'"
                " locks until it commits; beyond this size a batch saves no measurable time"
            )
        return value


class ReceiverSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    redact_headers: list[str] = Field(
        default_factory=lambda: ["authorization", "cookie", "proxy-authorization"]
    )
    write_timeout_seconds: float = Field(default=5.0, gt=0)
    # What one client may hold (inbox._cli.http_limits): a head over max_header_bytes or
    # with more than max_headers fields gets 431; a head not received within
    # head_timeout_seconds, or a body not within body_timeout_seconds of its head, 408;
    # past max_connections open connections, each new request gets 503.
    max_header_bytes: int = Field(default=32 * 1024, ge=1024)
    max_headers: int = Field(default=100, ge=10)
    head_timeout_seconds: float = Field(default=10.0, gt=0)
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    max_connections: int = Field(default=1000, ge=1)


class AppSettings(Section):
    """Your application: the handlers ``inbox dev`` (and ``inbox worker`` without ``--app``)
    run, and your own tables, which ``inbox dev`` creates after pg-inbox's migrations."""

    # module:attribute of a processors.Router, imported from the current directory.
    router: str | None = None
    # SQL files, or folders of them (applied in name order), relative to the current
    # directory. `inbox dev` applies them on every start, so each must be idempotent
    # (`create table if not exists ...`); in production they are your own migrations, run
    # after `inbox db upgrade`.
    tables: list[Path] = Field(default_factory=list)
    # The version of the handlers this deploy runs (its git commit, say): what workers
    # report, and what `inbox replay --require-version` asks for. Unset, a worker reports a
    # fingerprint of its handlers' source files.
    version: str | None = Field(default=None, min_length=1, max_length=200)


class RetentionSettings(Section):
    # `inbox prune` refuses to remove events younger than this: a pruned event can no longer
    # be inspected or replayed (its key stays in inbox_keys, so dedupe is unaffected). The
    # database enforces it, as `inbox db upgrade` last set it.
    minimum_days: float = Field(default=7.0, ge=1.0)
    # The log's partitions: one per UTC day, ISO week or month. A prune drops whole ones,
    # so this is its granularity (docs/operations.md, "Retention at scale").
    partition: Literal["day", "week", "month"] = "week"
    # Unset: keys are kept for good (a key delivered again, however late, is a duplicate).
    # Set: a prune also removes keys older than this whose events are gone.
    keys_days: float | None = Field(default=None, ge=1.0)


class ConsoleUser(Section):
    """One ``[[console.users]]`` entry. ``password_hash`` comes from ``inbox console
    hash-password``; a user without one can only sign in through the trusted header (the
    entry then only gives that SSO user a role)."""

    name: str = Field(min_length=1, max_length=200)
    role: Literal["viewer", "operator"] = "viewer"
    password_hash: SecretStr | None = None

    @field_validator("password_hash")
    @classmethod
    def _known_hash(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().startswith("scrypt$"):
            raise ValueError("not a hash from `inbox console hash-password` (scrypt$n$r$p$...)")
        return value


# Headers that commonly carry a credential: a password, a key, a token, a session.
_CREDENTIAL_HEADERS = (
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "x-access-token",
    "x-csrf-token",
    "x-xsrf-token",
    "x-amz-security-token",
    "x-goog-api-key",
    "ocp-apim-subscription-key",
    "private-token",
    "x-gitlab-token",
    "x-telegram-bot-api-secret-token",
    "x-webhook-secret",
    "x-webhook-token",
)


class ConsoleSettings(Section):
    """The operator console (``inbox console``; ``/console`` in ``inbox serve`` when
    ``enabled``)."""

    enabled: bool = False
    # Who sees event bodies: operators ("operators"), every signed-in user ("all"), nobody.
    bodies: Literal["operators", "all", "none"] = "operators"
    # A header an SSO proxy sets to the signed-in user's name, honoured only on requests
    # whose peer address is in `trusted_proxies`.
    trusted_header: str | None = Field(default=None, min_length=1)
    trusted_proxies: list[IPvAnyNetwork] = Field(default_factory=list)
    # The role of a trusted-header user who has no [[console.users]] entry.
    trusted_role: Literal["viewer", "operator"] = "viewer"
    users: list[ConsoleUser] = Field(default_factory=list)
    # Signs the session cookies. Inline, or read from `secret_key_env` / `secret_key_file`.
    secret_key: SecretStr | None = None
    secret_key_env: str | None = None
    secret_key_file: Path | None = None
    session_idle_minutes: float = Field(default=30.0, gt=0)
    # A session ends this long after its sign-in, however busy.
    session_max_hours: float = Field(default=12.0, gt=0)
    # Headers the console shows as redacted to everyone (with the receiver's
    # `redact_headers`): credentials a provider or a proxy sent, which no page needs.
    redact_headers: list[str] = Field(default_factory=lambda: list(_CREDENTIAL_HEADERS))
    # Failed sign-ins allowed per user and address within the window, then 429 until it ends;
    # and per address whatever the names (password spraying).
    login_attempts: int = Field(default=5, ge=1)
    login_attempts_per_address: int = Field(default=20, ge=1)
    login_window_seconds: float = Field(default=300.0, gt=0)
    # Receivers' /metrics URLs the overview reads rejection counts from (never stored).
    receiver_metrics: list[str] = Field(default_factory=list)
    # Where `inbox serve` mounts it, and the path `inbox console` serves it under.
    base_path: str = Field(default="/console", pattern=r"^(/[A-Za-z0-9._~-]+)+$")
    host: str = "127.0.0.1"
    port: int = Field(default=8001, ge=0, le=65535)

    @field_validator("users")
    @classmethod
    def _unique_user_names(cls, users: list[ConsoleUser]) -> list[ConsoleUser]:
        require_unique("user", [u.name for u in users])
        return users

    def secret_key_value(self) -> str | None:
        """The session key: inline, else the ``secret_key_env`` variable, else the file."""
        if self.secret_key is not None:
            return self.secret_key.get_secret_value()
        if self.secret_key_env and os.environ.get(self.secret_key_env):
            return os.environ[self.secret_key_env]
        if self.secret_key_file is not None:
            warn_if_readable_by_others(self.secret_key_file, "console.secret_key_file")
            try:
                return self.secret_key_file.read_text(encoding="utf-8").strip() or None
            except OSError as exc:
                raise ConfigError(
                    f"console.secret_key_file: cannot read {self.secret_key_file}: {exc}",
                    path=str(self.secret_key_file),
                    field="console.secret_key_file",
                ) from exc
        return None
